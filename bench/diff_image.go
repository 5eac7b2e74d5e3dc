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

	"github.com/containerd/stargz-snapshotter/estargz"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/layertoc"
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
	// toStargz is version 2 with eStargz layers (the same files): the
	// packages rows read it beside the gzip one, where each layer's TOC
	// stands in for reading the layer.
	toStargz *testregistry.Image
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

// layerBlob is a built layer: the blob, its diffID and the annotations
// its manifest descriptor carries.
type layerBlob struct {
	testregistry.Blob
	diffID digest.Digest
	ann    map[string]string
}

// buildLayer writes files (and their parent directories, once each) as a
// gzip tar layer, or with stargz an eStargz one.
func buildLayer(files []layerFile, rng io.Reader, created time.Time, stargz bool) (layerBlob, error) {
	var gz, raw bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	sum := sha256.New()
	var out io.Writer = io.MultiWriter(zw, sum)
	if stargz {
		out = &raw
	}
	tw := tar.NewWriter(out)
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
			return layerBlob{}, err
		}
		size := int64(f.size)
		if f.data != nil {
			size = int64(len(f.data))
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.name, "/"), Mode: f.mode, Size: size, ModTime: created}); err != nil {
			return layerBlob{}, err
		}
		var err error
		if f.data != nil {
			_, err = tw.Write(f.data)
		} else {
			_, err = io.CopyN(tw, rng, size)
		}
		if err != nil {
			return layerBlob{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return layerBlob{}, err
	}
	if stargz {
		return stargzLayer(raw.Bytes())
	}
	if err := zw.Close(); err != nil {
		return layerBlob{}, err
	}
	diffID := digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(sum.Sum(nil)))
	return layerBlob{Blob: testregistry.NewBlob(ocispec.MediaTypeImageLayerGzip, gz.Bytes()), diffID: diffID}, nil
}

// stargzLayer is raw (a tar) as stargz-snapshotter's builder writes it,
// at gzip's fastest level as buildLayer's gzip.
func stargzLayer(raw []byte) (layerBlob, error) {
	blob, err := estargz.Build(io.NewSectionReader(bytes.NewReader(raw), 0, int64(len(raw))), estargz.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return layerBlob{}, err
	}
	defer blob.Close()
	b, err := io.ReadAll(blob)
	if err != nil {
		return layerBlob{}, err
	}
	return layerBlob{Blob: testregistry.NewBlob(ocispec.MediaTypeImageLayerGzip, b), diffID: blob.DiffID(),
		ann: map[string]string{layertoc.AnnotationEStargzTOCDigest: blob.TOCDigest().String()}}, nil
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

// diffImages builds the two versions, and version 2 again in eStargz
// (deterministic: fixed seeds and dates).
func diffImages(sz diffSizes) (*diffFixture, error) {
	created := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	platform := ocispec.Platform{OS: "linux", Architecture: "amd64"}
	fx := &diffFixture{packages: diffPackages + 1}
	base := func(stargz bool) ([]layerBlob, error) {
		var out []layerBlob
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
			l, err := buildLayer(files, rand.NewChaCha8([32]byte{'d', 'i', 'f', 'f', byte(i)}), created, stargz)
			if err != nil {
				return nil, err
			}
			out = append(out, l)
		}
		return out, nil
	}
	// The assets are the same bytes in both versions; the program is not.
	assets := make([]byte, sz.assets)
	rand.NewChaCha8([32]byte{'a', 's', 's', 'e', 't', 's'}).Read(assets)
	version := func(base []layerBlob, n int, pkgVersion string, stargz bool) (*testregistry.Image, int64, error) {
		files := []layerFile{{name: diffStatusPath, mode: 0o644, data: dpkgStatus(diffPackages, pkgVersion, true)}}
		prog := make([]byte, sz.program)
		rand.NewChaCha8([32]byte{'p', 'r', 'o', 'g', byte(n)}).Read(prog)
		files = append(files, layerFile{name: diffProgram, mode: 0o755, data: prog})
		for off, a := 0, 0; off < len(assets); off, a = off+diffFileSize, a+1 {
			files = append(files, layerFile{name: fmt.Sprintf("/opt/bench/assets/a%03d.bin", a), mode: 0o644, data: assets[off:min(off+diffFileSize, len(assets))]})
		}
		when := created.Add(time.Duration(n) * 24 * time.Hour)
		top, err := buildLayer(files, nil, when, stargz)
		if err != nil {
			return nil, 0, err
		}
		cfg := ocispec.Image{Platform: platform, Created: &when, RootFS: ocispec.RootFS{Type: "layers"},
			Config: ocispec.ImageConfig{Cmd: []string{diffProgram}, Labels: map[string]string{"org.opencontainers.image.version": fmt.Sprint(n)}}}
		img, err := assembleImage(platform, cfg, append(append([]layerBlob(nil), base...), top))
		return img, int64(len(top.Data)), err
	}
	gzBase, err := base(false)
	if err != nil {
		return nil, err
	}
	for _, l := range gzBase {
		fx.shared += int64(len(l.Data))
	}
	if fx.from, fx.fromTop, err = version(gzBase, 1, diffVersionFrom, false); err != nil {
		return nil, err
	}
	if fx.to, fx.toTop, err = version(gzBase, 2, diffVersionTo, false); err != nil {
		return nil, err
	}
	sgBase, err := base(true)
	if err != nil {
		return nil, err
	}
	if fx.toStargz, _, err = version(sgBase, 2, diffVersionTo, true); err != nil {
		return nil, err
	}
	return fx, nil
}

// assembleImage is the image of cfg over layers (cfg's diffIDs are set
// from them): config and manifest blobs.
func assembleImage(platform ocispec.Platform, cfg ocispec.Image, layers []layerBlob) (*testregistry.Image, error) {
	img := &testregistry.Image{Platform: platform}
	for _, l := range layers {
		img.Layers = append(img.Layers, l.Blob)
		img.DiffIDs = append(img.DiffIDs, l.diffID.String())
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, l.diffID)
	}
	cb, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	img.Config = testregistry.NewBlob(ocispec.MediaTypeImageConfig, cb)
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: img.Config.Descriptor()}
	m.SchemaVersion = 2
	for _, l := range layers {
		d := l.Descriptor()
		d.Annotations = l.ann
		m.Layers = append(m.Layers, d)
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	img.Manifest = testregistry.NewBlob(ocispec.MediaTypeImageManifest, mb)
	return img, nil
}
