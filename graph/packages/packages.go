// Package packages is the packages room: the installed packages of an
// image, read from its package databases and binaries through the layer
// index (graph/contents), and compared between two images.
//
// The catalogers emit what syft's catalogers emit for the same files
// (names, versions, types and package URLs), so that a list compares with
// syft's as it is: dpkg (status and status.d), apk (installed), rpm
// (sqlite, ndb and bdb through go-rpmdb), the build info of Go binaries,
// and /etc/os-release for the distro the package URLs name.
package packages

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/types"
)

// FS is the image's merged file system as the catalogers read it: graph
// implements it over the contents room.
type FS interface {
	// Copy writes the bytes of the file p resolves to (symlinks followed
	// inside the root) to w. A path that is absent fails with an error of
	// class errdefs.ErrNotFound.
	Copy(ctx context.Context, p string, w io.Writer) error
	// Walk calls fn with every path of the merged view.
	Walk(ctx context.Context, fn func(types.FileEntry) error) error
}

// Limits bound what one catalog reads. Every file is read from outside
// (the image's publisher wrote it), so each is capped before it is read.
type Limits struct {
	// MaxTextDB caps a dpkg status file (or one status.d file) and apk's
	// installed: 64 MiB. A full Debian desktop's status is about 5 MiB,
	// an Alpine build image's installed about 2 MiB.
	MaxTextDB int64
	// MaxRPMDB caps an rpm database spooled to disk: 512 MiB. A Fedora
	// workstation's rpmdb.sqlite is about 100 MiB; bdb Packages of an old
	// CentOS with 1,500 packages about 150 MiB.
	MaxRPMDB int64
	// MaxPackages caps the packages of one image: 200,000, ten times the
	// largest distribution image measured (a Fedora DVD install, ~6,000
	// rpms, plus Go modules).
	MaxPackages int
	// MaxStatusFiles caps the files of status.d read: 20,000 (distroless
	// writes two per package).
	MaxStatusFiles int
	// MaxBinarySize caps one executable read for Go build info: 512 MiB
	// (large Go binaries are 200 MiB); a larger one is skipped.
	MaxBinarySize int64
	// MaxBinaries caps the executables examined: 2,000 (a Debian base
	// image has about 450). Beyond it the rest are not read.
	MaxBinaries int
	// MaxBinaryBytes caps the bytes of executables read in all: 2 GiB.
	MaxBinaryBytes int64
	// MaxOSRelease caps /etc/os-release: 64 KiB (it is a dozen lines).
	MaxOSRelease int64
	// TempDir is where rpm databases and binaries are spooled ("" = the
	// system's).
	TempDir string
}

// DefaultLimits are the limits above.
func DefaultLimits() Limits {
	return Limits{
		MaxTextDB:      64 << 20,
		MaxRPMDB:       512 << 20,
		MaxPackages:    200_000,
		MaxStatusFiles: 20_000,
		MaxBinarySize:  512 << 20,
		MaxBinaries:    2_000,
		MaxBinaryBytes: 2 << 30,
		MaxOSRelease:   64 << 10,
	}
}

// ErrTooLarge is the class of a file or list over its limit.
var ErrTooLarge = fmt.Errorf("over the limit%w", errdefs.ErrResourceExhausted)

// Catalog is the packages and distro of one image.
type Catalog struct {
	Distro   *Release
	Packages []types.Package
}

// Read catalogs the image fsys holds.
func Read(ctx context.Context, fsys FS, lim Limits) (*Catalog, error) {
	if lim.MaxTextDB <= 0 {
		lim = DefaultLimits()
	}
	rel, err := readRelease(ctx, fsys, lim)
	if err != nil {
		return nil, err
	}
	files, err := walk(ctx, fsys, lim)
	if err != nil {
		return nil, err
	}
	c := &collector{max: lim.MaxPackages, layer: files.layer}
	steps := []func() error{
		func() error { return catalogDpkg(ctx, fsys, lim, files, rel, c) },
		func() error { return catalogApk(ctx, fsys, lim, files, rel, c) },
		func() error { return catalogRPM(ctx, fsys, lim, files, rel, c) },
		func() error { return catalogGo(ctx, fsys, lim, files, c) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return &Catalog{Distro: rel, Packages: c.sorted()}, nil
}

// collector gathers packages: one per (Type, Name, Version, PURL), its
// locations merged, as many binaries carry one module.
type collector struct {
	max   int
	layer map[string]string
	pkgs  []types.Package
	at    map[string]int
}

// unknownVersion stands for a version the database or binary does not
// give, as syft's default compliance stubs it (the purl keeps none).
const unknownVersion = "UNKNOWN"

func (c *collector) add(p types.Package) error {
	if p.Name == "" {
		return nil // as syft's pkg.IsValid and its compliance's missing-name
	}
	if p.Version == "" {
		p.Version = unknownVersion
	}
	key := p.Type + "\x00" + p.Name + "\x00" + p.Version + "\x00" + p.PURL
	if c.at == nil {
		c.at = map[string]int{}
	}
	if i, ok := c.at[key]; ok {
		q := &c.pkgs[i]
		for _, l := range p.Locations {
			if !contains(q.Locations, l) {
				q.Locations = append(q.Locations, l)
			}
		}
		return nil
	}
	if len(c.pkgs) >= c.max {
		return fmt.Errorf("more than %d packages: %w", c.max, ErrTooLarge)
	}
	if len(p.Locations) > 0 {
		p.Layer = c.layer[p.Locations[0]]
	}
	c.at[key] = len(c.pkgs)
	c.pkgs = append(c.pkgs, p)
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (c *collector) sorted() []types.Package {
	out := c.pkgs
	if out == nil {
		out = []types.Package{}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.PURL < b.PURL
	})
	return out
}

// readCapped reads the file p whole, failing with ErrTooLarge past max
// bytes.
func readCapped(ctx context.Context, fsys FS, p string, max int64) ([]byte, error) {
	w := &capWriter{max: max}
	if err := fsys.Copy(ctx, p, w); err != nil {
		if errors.Is(err, errCapped) {
			return nil, fmt.Errorf("%s: larger than %d bytes: %w", p, max, ErrTooLarge)
		}
		return nil, err
	}
	return w.buf, nil
}

var errCapped = errors.New("capped")

// capWriter keeps up to max bytes and fails the write that goes past.
type capWriter struct {
	buf []byte
	max int64
}

func (w *capWriter) Write(p []byte) (int, error) {
	if int64(len(w.buf))+int64(len(p)) > w.max {
		return 0, errCapped
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}
