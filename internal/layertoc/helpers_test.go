package layertoc

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/stargz-snapshotter/estargz"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/storage/pkg/chunked/compressor"
)

// blobReader serves a blob's ranges and counts the requests, as a
// registry answering single-range requests would.
type blobReader struct {
	b     []byte
	calls atomic.Int64
	bytes atomic.Int64 // bytes asked for
}

func (r *blobReader) ReadRange(_ context.Context, off, n int64) (io.ReadCloser, error) {
	r.calls.Add(1)
	r.bytes.Add(n)
	if off < 0 || n <= 0 || off > int64(len(r.b))-n {
		return nil, fmt.Errorf("range %d+%d outside a blob of %d bytes", off, n, len(r.b))
	}
	return io.NopCloser(bytes.NewReader(r.b[off : off+n])), nil
}

// tarEntry is one entry of a test tar.
type tarEntry struct {
	hdr  tar.Header
	body []byte
}

var mtime = time.Date(2024, 3, 1, 12, 30, 45, 0, time.UTC)

// corpusTar is a layer with every entry type, PAX long names, setuid,
// an empty file, a multi-chunk random file, a file of zeros and many
// small files (which eStargz may pack into one gzip member).
func corpusTar(t testing.TB) []byte {
	t.Helper()
	rnd := rand.New(rand.NewSource(1))
	big := make([]byte, 300<<10)
	rnd.Read(big)
	text := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog\n", 4000))
	long := "usr/share/" + strings.Repeat("very-long-directory-name/", 8) + "file.txt"
	es := []tarEntry{
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: 0o755}},
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755}},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "etc/os-release", Mode: 0o644}, body: []byte("ID=wharf\nVERSION_ID=1\n")},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "etc/empty", Mode: 0o600, Uid: 1000, Gid: 1000}},
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "usr/", Mode: 0o755}},
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "usr/bin/", Mode: 0o755}},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "usr/bin/su", Mode: 0o4755}, body: []byte("#!/bin/sh\necho su\n")},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "usr/bin/big", Mode: 0o755}, body: big},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "usr/bin/text", Mode: 0o2755, Uid: 2, Gid: 3}, body: text},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "usr/zeros", Mode: 0o644}, body: make([]byte, 200<<10)},
		{hdr: tar.Header{Typeflag: tar.TypeLink, Name: "usr/bin/su2", Linkname: "usr/bin/su", Mode: 0o4755}},
		{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "usr/bin/sh", Linkname: "/bin/busybox", Mode: 0o777}},
		{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "usr/lib", Linkname: "../lib", Mode: 0o777}},
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777}},
		{hdr: tar.Header{Typeflag: tar.TypeFifo, Name: "tmp/fifo", Mode: 0o644}},
		{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "tmp/null", Mode: 0o666, Devmajor: 1, Devminor: 3}},
		{hdr: tar.Header{Typeflag: tar.TypeBlock, Name: "tmp/sda", Mode: 0o660, Devmajor: 8, Devminor: 0}},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: long, Mode: 0o644}, body: []byte("long\n")},
	}
	for i := range 40 {
		es = append(es, tarEntry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("usr/share/doc/f%02d", i), Mode: 0o644},
			body: []byte(strings.Repeat(fmt.Sprintf("doc %d\n", i), i*13))})
	}
	return writeTar(t, es)
}

func writeTar(t testing.TB, es []tarEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range es {
		h := e.hdr
		h.ModTime = mtime
		h.Size = int64(len(e.body))
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// buildEStargz makes an eStargz layer with stargz-snapshotter's own
// builder, and its descriptor as a builder's manifest would carry it.
func buildEStargz(t testing.TB, tarb []byte, opts ...estargz.Option) ([]byte, ocispec.Descriptor) {
	t.Helper()
	blob, err := estargz.Build(io.NewSectionReader(bytes.NewReader(tarb), 0, int64(len(tarb))), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer blob.Close()
	b, err := io.ReadAll(blob)
	if err != nil {
		t.Fatal(err)
	}
	return b, ocispec.Descriptor{
		MediaType:   ocispec.MediaTypeImageLayerGzip,
		Digest:      digest.FromBytes(b),
		Size:        int64(len(b)),
		Annotations: map[string]string{AnnotationEStargzTOCDigest: blob.TOCDigest().String()},
	}
}

// buildZstdChunked makes a zstd:chunked layer with containers/storage's
// own compressor, which also writes the annotations.
func buildZstdChunked(t testing.TB, tarb []byte) ([]byte, ocispec.Descriptor) {
	t.Helper()
	var b bytes.Buffer
	ann := map[string]string{}
	w, err := compressor.ZstdCompressor(&b, ann, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(tarb); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), ocispec.Descriptor{
		MediaType:   ocispec.MediaTypeImageLayerZstd,
		Digest:      digest.FromBytes(b.Bytes()),
		Size:        int64(b.Len()),
		Annotations: ann,
	}
}

// oracle reads an uncompressed tar with archive/tar: the entries as this
// package should list them, and each file's content.
func oracle(t testing.TB, r io.Reader) ([]Entry, map[string][]byte) {
	t.Helper()
	tr := tar.NewReader(r)
	var out []Entry
	content := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, content
		}
		if err != nil {
			t.Fatal(err)
		}
		p := path.Clean("/" + h.Name)
		e := Entry{Path: p, Mode: h.FileInfo().Mode(), UID: h.Uid, GID: h.Gid, ModTime: h.ModTime, Linkname: h.Linkname}
		switch h.Typeflag {
		case tar.TypeReg:
			e.Type, e.Size = TypeFile, h.Size
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			content[p] = b
		case tar.TypeDir:
			e.Type = TypeDir
		case tar.TypeSymlink:
			e.Type = TypeSymlink
		case tar.TypeLink:
			e.Type, e.Linkname = TypeHardlink, "/"+path.Clean(h.Linkname)
		case tar.TypeChar:
			e.Type, e.Devmajor, e.Devminor = TypeChar, h.Devmajor, h.Devminor
		case tar.TypeBlock:
			e.Type, e.Devmajor, e.Devminor = TypeBlock, h.Devmajor, h.Devminor
		case tar.TypeFifo:
			e.Type = TypeFifo
		default:
			t.Fatalf("oracle: %q has type %q", h.Name, h.Typeflag)
		}
		out = append(out, e)
	}
}

// sameEntries compares the listing with the oracle's, path by path.
func sameEntries(t *testing.T, got, want []Entry) {
	t.Helper()
	byPath := map[string]Entry{}
	for _, e := range got {
		if _, dup := byPath[e.Path]; dup {
			t.Errorf("%s listed twice", e.Path)
		}
		byPath[e.Path] = e
	}
	for _, w := range want {
		g, ok := byPath[w.Path]
		if !ok {
			t.Errorf("%s missing from the TOC's listing", w.Path)
			continue
		}
		delete(byPath, w.Path)
		if g.Type != w.Type || g.Mode != w.Mode || g.UID != w.UID || g.GID != w.GID || g.Size != w.Size ||
			!g.ModTime.Equal(w.ModTime) || g.Linkname != w.Linkname || g.Devmajor != w.Devmajor || g.Devminor != w.Devminor {
			t.Errorf("%s:\n got %s %v %d:%d size %d %s %q dev %d,%d\nwant %s %v %d:%d size %d %s %q dev %d,%d", w.Path,
				g.Type, g.Mode, g.UID, g.GID, g.Size, g.ModTime, g.Linkname, g.Devmajor, g.Devminor,
				w.Type, w.Mode, w.UID, w.GID, w.Size, w.ModTime, w.Linkname, w.Devmajor, w.Devminor)
		}
	}
	for p := range byPath {
		t.Errorf("%s listed by the TOC, not in the tar", p)
	}
}
