package layertoc

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"testing"

	"github.com/containerd/stargz-snapshotter/estargz"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// fuzzLimits keep each fuzz input cheap; the parsers are the same.
func fuzzLimits() Limits {
	l := DefaultLimits()
	l.TOCCompressed, l.TOCUncompressed, l.Entries, l.ChunksPerFile = 1<<20, 1<<20, 1000, 100
	return l
}

const fuzzDataEnd = 1 << 20

// checkListing holds for every listing this package returns: clean
// absolute paths that stay inside the layer, known types, chunks that
// tile their file and lie inside the layer's data.
func checkListing(t *testing.T, entries []Entry, dataEnd int64) {
	t.Helper()
	for _, e := range entries {
		if !strings.HasPrefix(e.Path, "/") || path.Clean(e.Path) != e.Path || strings.Contains(e.Path, "/../") {
			t.Fatalf("path %q is not clean and absolute", e.Path)
		}
		switch e.Type {
		case TypeFile, TypeDir, TypeSymlink, TypeHardlink, TypeChar, TypeBlock, TypeFifo:
		default:
			t.Fatalf("%s: type %q", e.Path, e.Type)
		}
		if e.Type == TypeHardlink && (!strings.HasPrefix(e.Linkname, "/") || path.Clean(e.Linkname) != e.Linkname) {
			t.Fatalf("%s: hardlink target %q", e.Path, e.Linkname)
		}
		if err := checkTiling(&e); err != nil {
			t.Fatalf("%s: %v", e.Path, err)
		}
		for _, c := range e.Chunks {
			if c.Offset < 0 || c.CompressedSize <= 0 || c.Offset+c.CompressedSize > dataEnd || c.Digest == "" {
				t.Fatalf("%s: chunk %+v outside 0-%d or without digest", e.Path, c, dataEnd)
			}
		}
	}
}

// seedTar is small: coverage-guided fuzzing slows to a crawl on seeds
// of tens of KiB.
func seedTar(t testing.TB) []byte {
	big := bytes.Repeat([]byte("0123456789abcdef"), 200)
	return writeTar(t, []tarEntry{
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755}},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "etc/big", Mode: 0o4755}, body: big},
		{hdr: tar.Header{Typeflag: tar.TypeLink, Name: "etc/big2", Linkname: "etc/big"}},
		{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "etc/sh", Linkname: "../bin/sh"}},
		{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "etc/null", Devmajor: 1, Devminor: 3}},
	})
}

func FuzzFooter(f *testing.F) {
	blob, _ := buildEStargz(f, seedTar(f))
	f.Add(blob[len(blob)-estargzFooterSize:])
	f.Add(blob[len(blob)-100:])
	f.Add(estargz.CreateGzipFooter([]byte(fmt.Sprintf("%016xSTARGZ", 1234))))
	f.Add(estargz.CreateGzipFooter([]byte(fmt.Sprintf("SG\x16\x00%016xSTARGZ", -1))))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, tail []byte) {
		off, n, err := parseFooter(tail)
		if err != nil {
			return
		}
		if off < 0 || (n != estargzFooterSize && n != legacyFooterSize) || int64(len(tail)) < n {
			t.Fatalf("footer: offset %d, size %d of a %d-byte tail", off, n, len(tail))
		}
	})
}

func FuzzTOCJSON(f *testing.F) {
	tarb := seedTar(f)
	es, _ := buildEStargz(f, tarb, estargz.WithChunkSize(1<<10))
	f.Add(esTOCJSON(f, es), false)
	zc, desc := buildZstdChunked(f, tarb)
	f.Add(unzstd(f, zstdTOCRange(f, zc, desc)[8:]), true)
	f.Add([]byte(`{"version":1,"entries":[{"name":"a","type":"reg","size":3,"chunkSize":0,"offset":1,"chunkDigest":"sha256:`+strings.Repeat("0", 64)+`"}]}`), false)
	f.Add([]byte(`{"version":1,"entries":[{"name":"a","type":"reg","size":4,"chunkSize":2,"offset":1,"endOffset":9,"chunkDigest":"sha256:`+strings.Repeat("0", 64)+`"},{"name":"a","type":"chunk","chunkOffset":2,"chunkSize":2,"offset":5,"chunkDigest":"sha256:`+strings.Repeat("1", 64)+`"}]}`), true)
	f.Fuzz(func(t *testing.T, data []byte, zstdc bool) {
		src := SourceEStargz
		if zstdc {
			src = SourceZstdChunked
		}
		lim := fuzzLimits()
		fo := newFolder(src, lim)
		if err := decodeEntries(bytes.NewReader(data), lim, fo.add); err != nil {
			return
		}
		entries, err := fo.finish(fuzzDataEnd)
		if err != nil {
			return
		}
		checkListing(t, entries, fuzzDataEnd)
	})
}

func FuzzZstdChunkedManifest(f *testing.F) {
	zc, desc := buildZstdChunked(f, seedTar(f))
	var off, n, nu int64
	pos := desc.Annotations[AnnotationZstdChunkedPosition]
	if _, err := fmt.Sscanf(pos, "%d:%d:%d:1", &off, &n, &nu); err != nil {
		f.Fatal(err)
	}
	f.Add(zstdTOCRange(f, zc, desc), nu, pos)
	f.Add([]byte{0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0}, int64(0), "8:0:0:1")
	f.Fuzz(func(t *testing.T, frame []byte, nu int64, pos string) {
		_, _, _, _ = parsePosition(pos)
		if len(frame) < zstdSkippableHeader || nu < 0 || nu > 1<<20 {
			return
		}
		n := int64(len(frame) - zstdSkippableHeader)
		want := digest.FromBytes(frame[zstdSkippableHeader:])
		entries, err := parseZstdChunkedTOC(bytes.NewReader(frame), want, n, nu, fuzzDataEnd, fuzzLimits())
		if err != nil {
			return
		}
		checkListing(t, entries, fuzzDataEnd)
	})
}

// esTOCJSON is the TOC JSON estargz wrote into blob.
func esTOCJSON(t testing.TB, blob []byte) []byte {
	t.Helper()
	tail := blob[len(blob)-estargzFooterSize:]
	off, _, err := parseFooter(tail)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(gunzip(t, blob[off:len(blob)-estargzFooterSize])))
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// zstdTOCRange is the frame header and payload the annotation points at.
func zstdTOCRange(t testing.TB, blob []byte, desc ocispec.Descriptor) []byte {
	t.Helper()
	var off, n, nu int64
	if _, err := fmt.Sscanf(desc.Annotations[AnnotationZstdChunkedPosition], "%d:%d:%d:1", &off, &n, &nu); err != nil {
		t.Fatal(err)
	}
	rc, err := (&blobReader{b: blob}).ReadRange(context.Background(), off-8, n+8)
	if err != nil {
		t.Fatal(err)
	}
	b := new(bytes.Buffer)
	b.ReadFrom(rc)
	return b.Bytes()
}
