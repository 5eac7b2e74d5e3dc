package packages

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	rpmdb "github.com/anchore/go-rpmdb/pkg"
	"github.com/containerd/errdefs"
	// go-rpmdb opens rpmdb.sqlite through database/sql's "sqlite"
	// driver: the pure-Go one it is tested with, as syft registers it.
	_ "github.com/glebarez/go-sqlite"

	"github.com/wharfproject/wharf/api/types"
)

// catalogRPM reads each rpm database with go-rpmdb (sqlite, ndb, bdb),
// which opens a path: the database is spooled to a temporary file first,
// capped at lim.MaxRPMDB.
func catalogRPM(ctx context.Context, fsys FS, lim Limits, f *files, rel *Release, c *collector) error {
	for _, p := range f.rpm {
		pkgs, err := readRPMDB(ctx, fsys, lim, p)
		if errors.Is(err, ErrTooLarge) || errdefs.IsNotFound(err) || errors.Is(err, errNotRPMDB) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range pkgs {
			if e == nil {
				continue
			}
			if err := c.add(rpmPackage(e, p, rel)); err != nil {
				return err
			}
		}
	}
	return nil
}

var errNotRPMDB = errors.New("not an rpm database")

func readRPMDB(ctx context.Context, fsys FS, lim Limits, p string) (pkgs []*rpmdb.PackageInfo, err error) {
	tmp, err := os.CreateTemp(lim.TempDir, "wharf-rpmdb-*")
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
	}()
	w := &capFile{f: tmp, max: lim.MaxRPMDB}
	if err := fsys.Copy(ctx, p, w); err != nil {
		if errors.Is(err, errCapped) {
			return nil, fmt.Errorf("%s: larger than %d bytes: %w", p, lim.MaxRPMDB, ErrTooLarge)
		}
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	// go-rpmdb reads a database written by the image's publisher: a
	// malformed one must fail this database, never the daemon.
	defer func() {
		if r := recover(); r != nil {
			pkgs, err = nil, fmt.Errorf("%s: %v: %w", p, r, errNotRPMDB)
		}
	}()
	db, err := rpmdb.Open(tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", p, err, errNotRPMDB)
	}
	defer db.Close()
	pkgs, err = db.ListPackages()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: %v: %w", p, err, errNotRPMDB)
	}
	return pkgs, nil
}

// rpmPackage is syft's: Version [EPOCH:]VERSION-RELEASE; the purl's
// namespace the distro's ID (rhel → redhat, opensuse* → opensuse).
func rpmPackage(e *rpmdb.PackageInfo, loc string, rel *Release) types.Package {
	version := e.Version + "-" + e.Release
	if e.Epoch != nil {
		version = strconv.Itoa(*e.Epoch) + ":" + version
	}
	p := types.Package{
		Name: e.Name, Version: version, Type: types.PackageTypeRpm,
		Arch: e.Arch, Locations: []string{loc},
	}
	if e.License != "" {
		p.Licenses = []string{e.License}
	}
	ns := ""
	if rel != nil {
		ns = rel.ID
	}
	if ns == "rhel" || ns == "hummingbird" {
		ns = "redhat"
	}
	if strings.HasPrefix(ns, "opensuse") {
		ns = "opensuse"
	}
	q := map[string]string{"arch": e.Arch, "upstream": e.SourceRpm}
	if e.Epoch != nil {
		q["epoch"] = strconv.Itoa(*e.Epoch)
	}
	p.PURL = purl("rpm", ns, e.Name, e.Version+"-"+e.Release, q, rel)
	return p
}

// capFile writes to f up to max bytes and fails the write that goes past.
type capFile struct {
	f   *os.File
	n   int64
	max int64
}

func (w *capFile) Write(p []byte) (int, error) {
	if w.n+int64(len(p)) > w.max {
		return 0, errCapped
	}
	n, err := w.f.Write(p)
	w.n += int64(n)
	return n, err
}
