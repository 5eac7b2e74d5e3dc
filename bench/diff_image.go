//go:build bench

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"path"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// Case 15's two versions of one image. They share a base of three gzip
// layers of 64 KiB files of random bytes (about 190 MB; gzip keeps their
// size, as it does a real image's binaries and compressed assets), with
// /etc/os-release and a first dpkg status in the bottom one. Each has its
// own top layer, as an `apt-get upgrade && COPY` step makes: the dpkg
// status, a rebuilt program and a few MB of assets. Between version 1 and
// 2 exactly one package (diffPackage) and one file besides the status
// (diffProgram) change, and the config's Created and version label.
const (
	diffRepo        = "bench/diff"
	diffBaseLayers  = 3
	diffFileSize    = 64 << 10
	diffStatusPath  = "/var/lib/dpkg/status"
	diffProgram     = "/usr/local/bin/benchd"
	diffPackage     = "libssl3"
	diffVersionFrom = "3.0.15-1~deb12u1"
	diffVersionTo   = "3.0.16-1~deb12u1"
	// diffPackages is the status's size: about a slim Debian's.
	diffPackages = 120
)

// diffSizes are the byte sizes of the fixture's parts.
type diffSizes struct {
	baseLayer, program, assets int
}

func diffSizesFor(quick bool) diffSizes {
	if quick {
		return diffSizes{baseLayer: 4 << 20, program: 256 << 10, assets: 512 << 10}
	}
	// 3 × 63 MiB of base and 4 MiB of top: about 200 MB an image.
	return diffSizes{baseLayer: 63 << 20, program: 1 << 20, assets: 3 << 20}
}

// diffFixture is the two versions and what a diff of them must find.
type diffFixture struct {
	from, to *testregistry.Image
	// shared is the compressed size of the base; fromTop and toTop of the
	// top layers.
	shared, fromTop, toTop int64
	packages               int // in the top layers' status
}

// layerFile is one entry of a layer built by buildLayer.
type layerFile struct {
	name string // absolute
	mode int64
	data []byte // nil: size random bytes from rng
	size int
}

// buildLayer writes files (and their parent directories, once each) as a
// gzip tar layer; it returns the blob and the diffID.
func buildLayer(files []layerFile, rng io.Reader, created time.Time) (testregistry.Blob, digest.Digest, error) {
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	raw := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(zw, raw))
	dirs := map[string]bool{}
	var mkdirs func(d string) error
	mkdirs = func(d string) error {
		if d == "/" || d == "." || dirs[d] {
			return nil
		}
		if err := mkdirs(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: created})
	}
	for _, f := range files {
		if err := mkdirs(path.Dir(f.name)); err != nil {
			return testregistry.Blob{}, "", err
		}
		size := int64(f.size)
		if f.data != nil {
			size = int64(len(f.data))
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.name, "/"), Mode: f.mode, Size: size, ModTime: created}); err != nil {
			return testregistry.Blob{}, "", err
		}
		var err error
		if f.data != nil {
			_, err = tw.Write(f.data)
		} else {
			_, err = io.CopyN(tw, rng, size)
		}
		if err != nil {
			return testregistry.Blob{}, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return testregistry.Blob{}, "", err
	}
	if err := zw.Close(); err != nil {
		return testregistry.Blob{}, "", err
	}
	diffID := digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(raw.Sum(nil)))
	return testregistry.NewBlob(ocispec.MediaTypeImageLayerGzip, gz.Bytes()), diffID, nil
}

const diffOSRelease = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
`

// dpkgStatus is a status file of n packages in dpkg's format, diffPackage
// at version; extra adds one more package (the top layer's install).
func dpkgStatus(n int, version string, extra bool) []byte {
	var b strings.Builder
	stanza := func(name, ver, desc string) {
		fmt.Fprintf(&b, "Package: %s\nStatus: install ok installed\nPriority: optional\nSection: libs\n"+
			"Installed-Size: %d\nMaintainer: Bench Maintainers <bench@example.invalid>\nArchitecture: amd64\n"+
			"Multi-Arch: same\nVersion: %s\nDepends: libc6 (>= 2.34)\nDescription: %s\n"+
			" A package of the bench's fixture, described on a second line as\n dpkg writes long descriptions.\n\n",
			name, 100+len(name)*37, ver, desc)
	}
	for i := 0; i < n; i++ {
		if i == n/2 {
			stanza(diffPackage, version, "Secure Sockets Layer toolkit - shared libraries")
			continue
		}
		stanza(fmt.Sprintf("libbench%03d", i), fmt.Sprintf("1.%d.%d-1", i%7, i%13), fmt.Sprintf("bench library %d", i))
	}
	if extra {
		stanza("benchd", "2.4.1-1", "the bench's daemon")
	}
	return []byte(b.String())
}

// diffImages builds the two versions (deterministic: fixed seeds and dates).
func diffImages(sz diffSizes) (*diffFixture, error) {
	created := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	platform := ocispec.Platform{OS: "linux", Architecture: "amd64"}
	rng := rand.NewChaCha8([32]byte{'d', 'i', 'f', 'f', 'b', 'a', 's', 'e'})
	fx := &diffFixture{packages: diffPackages + 1}
	var base []testregistry.Blob
	var baseIDs []digest.Digest
	for i := 0; i < diffBaseLayers; i++ {
		var files []layerFile
		if i == 0 {
			files = append(files,
				layerFile{name: "/etc/os-release", mode: 0o644, data: []byte(diffOSRelease)},
				layerFile{name: diffStatusPath, mode: 0o644, data: dpkgStatus(diffPackages, diffVersionFrom, false)})
		}
		for f := 0; f < sz.baseLayer/diffFileSize; f++ {
			files = append(files, layerFile{name: fmt.Sprintf("/usr/lib/bench/layer%d/f%05d.bin", i, f), mode: 0o644, size: diffFileSize})
		}
		l, id, err := buildLayer(files, rng, created)
		if err != nil {
			return nil, err
		}
		base, baseIDs = append(base, l), append(baseIDs, id)
		fx.shared += int64(len(l.Data))
	}
	// The assets are the same bytes in both versions; the program is not.
	assets := make([]byte, sz.assets)
	rand.NewChaCha8([32]byte{'a', 's', 's', 'e', 't', 's'}).Read(assets)
	version := func(n int, pkgVersion string, seed byte) (*testregistry.Image, int64, error) {
		files := []layerFile{{name: diffStatusPath, mode: 0o644, data: dpkgStatus(diffPackages, pkgVersion, true)}}
		prog := make([]byte, sz.program)
		rand.NewChaCha8([32]byte{'p', 'r', 'o', 'g', seed}).Read(prog)
		files = append(files, layerFile{name: diffProgram, mode: 0o755, data: prog})
		for off, a := 0, 0; off < len(assets); off, a = off+diffFileSize, a+1 {
			files = append(files, layerFile{name: fmt.Sprintf("/opt/bench/assets/a%03d.bin", a), mode: 0o644, data: assets[off:min(off+diffFileSize, len(assets))]})
		}
		top, topID, err := buildLayer(files, nil, created.Add(time.Duration(n)*24*time.Hour))
		if err != nil {
			return nil, 0, err
		}
		when := created.Add(time.Duration(n) * 24 * time.Hour)
		cfg := ocispec.Image{Platform: platform, Created: &when, RootFS: ocispec.RootFS{Type: "layers", DiffIDs: append(append([]digest.Digest(nil), baseIDs...), topID)},
			Config: ocispec.ImageConfig{Cmd: []string{diffProgram}, Labels: map[string]string{"org.opencontainers.image.version": fmt.Sprint(n)}}}
		img, err := assembleImage(platform, cfg, append(append([]testregistry.Blob(nil), base...), top))
		return img, int64(len(top.Data)), err
	}
	var err error
	if fx.from, fx.fromTop, err = version(1, diffVersionFrom, 1); err != nil {
		return nil, err
	}
	if fx.to, fx.toTop, err = version(2, diffVersionTo, 2); err != nil {
		return nil, err
	}
	return fx, nil
}

// assembleImage is the image of cfg over layers: config and manifest blobs.
func assembleImage(platform ocispec.Platform, cfg ocispec.Image, layers []testregistry.Blob) (*testregistry.Image, error) {
	img := &testregistry.Image{Platform: platform, Layers: layers}
	for _, id := range cfg.RootFS.DiffIDs {
		img.DiffIDs = append(img.DiffIDs, id.String())
	}
	cb, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	img.Config = testregistry.NewBlob(ocispec.MediaTypeImageConfig, cb)
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: img.Config.Descriptor()}
	m.SchemaVersion = 2
	for _, l := range layers {
		m.Layers = append(m.Layers, l.Descriptor())
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	img.Manifest = testregistry.NewBlob(ocispec.MediaTypeImageManifest, mb)
	return img, nil
}
