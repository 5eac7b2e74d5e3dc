package layertoc

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/containerd/stargz-snapshotter/estargz"
	"github.com/klauspost/compress/zstd"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// jtocOf reads back the TOC that estargz.Build wrote.
func jtocOf(t *testing.T, blob []byte) (*estargz.JTOC, int64) {
	t.Helper()
	off, _, err := estargz.OpenFooter(io.NewSectionReader(bytes.NewReader(blob), 0, int64(len(blob))))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob[off:]))
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	tr := tar.NewReader(zr)
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	var toc estargz.JTOC
	if err := json.NewDecoder(tr).Decode(&toc); err != nil {
		t.Fatal(err)
	}
	return &toc, off
}

// craftEStargz appends toc, written by estargz's own TOC writer, to
// prefix: a layer whose TOC says whatever the test wants, with the
// matching digest annotation.
func craftEStargz(t *testing.T, prefix []byte, toc *estargz.JTOC) ([]byte, ocispec.Descriptor) {
	t.Helper()
	var b bytes.Buffer
	b.Write(prefix)
	d, err := estargz.NewGzipCompressorWithLevel(gzip.BestSpeed).WriteTOCAndFooter(&b, int64(len(prefix)), toc, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromBytes(b.Bytes()),
		Size: int64(b.Len()), Annotations: map[string]string{AnnotationEStargzTOCDigest: d.String()}}
}

// craftZstdChunked appends a TOC frame holding tocJSON to prefix, with
// the annotations containers/storage would write for it.
func craftZstdChunked(t testing.TB, prefix, tocJSON []byte) ([]byte, ocispec.Descriptor) {
	t.Helper()
	zw, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	z := zw.EncodeAll(tocJSON, nil)
	var b bytes.Buffer
	b.Write(prefix)
	var hdr [8]byte
	binary.LittleEndian.PutUint32(hdr[:4], zstdSkippableMagic)
	binary.LittleEndian.PutUint32(hdr[4:], uint32(len(z)))
	b.Write(hdr[:])
	off := b.Len()
	b.Write(z)
	return b.Bytes(), ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerZstd, Digest: digest.FromBytes(b.Bytes()), Size: int64(b.Len()),
		Annotations: map[string]string{
			AnnotationZstdChunkedChecksum: digest.FromBytes(z).String(),
			AnnotationZstdChunkedPosition: fmt.Sprintf("%d:%d:%d:1", off, len(z), len(tocJSON)),
		}}
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	zw.Close()
	return out.Bytes()
}

func TestHostileEStargzTOCsRefused(t *testing.T) {
	prefix := gz(t, []byte("hello"))
	reg := func(name string, off int64) *estargz.TOCEntry {
		return &estargz.TOCEntry{Name: name, Type: "reg", Size: 5, Offset: off, ChunkDigest: digest.FromString("hello").String()}
	}
	for _, tc := range []struct {
		name    string
		entries []*estargz.TOCEntry
		want    error
	}{
		{"dot-dot name", []*estargz.TOCEntry{reg("../etc/passwd", 0)}, ErrInvalidTOC},
		{"dot-dot inside", []*estargz.TOCEntry{reg("a/../../etc/passwd", 0)}, ErrInvalidTOC},
		{"absolute name", []*estargz.TOCEntry{reg("/etc/passwd", 0)}, ErrInvalidTOC},
		{"NUL in name", []*estargz.TOCEntry{reg("etc/pass\x00wd", 0)}, ErrInvalidTOC},
		{"hardlink out", []*estargz.TOCEntry{{Name: "x", Type: "hardlink", LinkName: "../../etc/shadow"}}, ErrInvalidTOC},
		{"offset past the data", []*estargz.TOCEntry{reg("a", int64(len(prefix))+100)}, ErrInvalidTOC},
		{"negative offset", []*estargz.TOCEntry{reg("a", -1)}, ErrInvalidTOC},
		{"chunk without file", []*estargz.TOCEntry{{Name: "a", Type: "chunk", ChunkOffset: 0, ChunkSize: 5}}, ErrInvalidTOC},
		{"chunk of another file", []*estargz.TOCEntry{
			{Name: "a", Type: "reg", Size: 10, ChunkSize: 5, ChunkDigest: digest.FromString("hello").String()},
			{Name: "b", Type: "chunk", ChunkOffset: 5, ChunkSize: 5, Offset: 1, ChunkDigest: digest.FromString("hello").String()}}, ErrInvalidTOC},
		{"chunks leave a hole", []*estargz.TOCEntry{
			{Name: "a", Type: "reg", Size: 10, ChunkSize: 5, ChunkDigest: digest.FromString("hello").String()},
			{Name: "a", Type: "chunk", ChunkOffset: 6, ChunkSize: 4, Offset: 1, ChunkDigest: digest.FromString("hello").String()}}, ErrInvalidTOC},
		{"second chunk before the first", []*estargz.TOCEntry{
			{Name: "a", Type: "reg", Size: 10, ChunkSize: 5, Offset: 5, ChunkDigest: digest.FromString("hello").String()},
			{Name: "a", Type: "chunk", ChunkOffset: 5, ChunkSize: 5, Offset: 1, ChunkDigest: digest.FromString("hello").String()}}, ErrInvalidTOC},
		{"no chunk digest", []*estargz.TOCEntry{{Name: "a", Type: "reg", Size: 5}}, ErrInvalidTOC},
		{"unknown type", []*estargz.TOCEntry{{Name: "a", Type: "socket"}}, ErrInvalidTOC},
		{"negative uid", []*estargz.TOCEntry{{Name: "a", Type: "dir", UID: -1}}, ErrInvalidTOC},
		{"long name", []*estargz.TOCEntry{reg(string(bytes.Repeat([]byte("a/"), 2049)), 0)}, ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blob, desc := craftEStargz(t, prefix, &estargz.JTOC{Version: 1, Entries: tc.entries})
			_, err := Read(context.Background(), &blobReader{b: blob}, desc)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			t.Log(err)
		})
	}
	blob, desc := craftEStargz(t, prefix, &estargz.JTOC{Version: 2})
	if _, err := Read(context.Background(), &blobReader{b: blob}, desc); !errors.Is(err, ErrInvalidTOC) {
		t.Fatalf("version 2: err = %v", err)
	}
}

func TestTOCDigestMismatchRefused(t *testing.T) {
	blob, desc := buildEStargz(t, corpusTar(t))
	desc.Annotations[AnnotationEStargzTOCDigest] = digest.FromString("another TOC").String()
	_, err := Read(context.Background(), &blobReader{b: blob}, desc)
	if !errors.Is(err, ErrDigestMismatch) || !errdefs.IsDataLoss(err) {
		t.Fatalf("eStargz: err = %v, want ErrDigestMismatch (DataLoss)", err)
	}
	blob, desc = buildZstdChunked(t, corpusTar(t))
	desc.Annotations[AnnotationZstdChunkedChecksum] = digest.FromString("another TOC").String()
	if _, err := Read(context.Background(), &blobReader{b: blob}, desc); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("zstd:chunked: err = %v, want ErrDigestMismatch", err)
	}
}

func TestZstdChunkedPositionLiesRefused(t *testing.T) {
	blob, desc := buildZstdChunked(t, corpusTar(t))
	var off, n, nu int64
	if _, err := fmt.Sscanf(desc.Annotations[AnnotationZstdChunkedPosition], "%d:%d:%d:1", &off, &n, &nu); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, pos string
		want      error
	}{
		{"past the blob", fmt.Sprintf("%d:%d:%d:1", desc.Size, n, nu), ErrInvalidTOC},
		{"shifted", fmt.Sprintf("%d:%d:%d:1", off+1, n, nu), ErrInvalidTOC},
		{"short", fmt.Sprintf("%d:%d:%d:1", off, n-1, nu), ErrInvalidTOC},
		{"uncompressed size lies", fmt.Sprintf("%d:%d:%d:1", off, n, nu-1), ErrInvalidTOC},
		{"type 2", fmt.Sprintf("%d:%d:%d:2", off, n, nu), ErrInvalidTOC},
		{"negative", fmt.Sprintf("-%d:%d:%d:1", off, n, nu), ErrInvalidTOC},
		{"three fields", fmt.Sprintf("%d:%d:%d", off, n, nu), ErrInvalidTOC},
		{"huge", fmt.Sprintf("%d:%d:%d:1", off, int64(1)<<40, nu), ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := desc
			d.Annotations = map[string]string{AnnotationZstdChunkedChecksum: desc.Annotations[AnnotationZstdChunkedChecksum], AnnotationZstdChunkedPosition: tc.pos}
			if _, err := Read(context.Background(), &blobReader{b: blob}, d); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestZstdChunkedTOCOffsetsPastTheDataRefused(t *testing.T) {
	data := []byte("0123456789")
	toc := fmt.Sprintf(`{"version":1,"entries":[{"type":"reg","name":"a","size":5,"offset":5,"endOffset":%d,"digest":%q}]}`, len(data)+50, digest.FromString("hello"))
	blob, desc := craftZstdChunked(t, data, []byte(toc))
	if _, err := Read(context.Background(), &blobReader{b: blob}, desc); !errors.Is(err, ErrInvalidTOC) {
		t.Fatalf("err = %v, want ErrInvalidTOC", err)
	}
}

func TestOverLimitsRefused(t *testing.T) {
	tarb := corpusTar(t)
	es, esDesc := buildEStargz(t, tarb, estargz.WithChunkSize(64<<10))
	zc, zcDesc := buildZstdChunked(t, tarb)
	set := func(f func(*Limits)) Option { l := DefaultLimits(); f(&l); return WithLimits(l) }
	for _, tc := range []struct {
		name string
		opt  Option
	}{
		{"TOC compressed", set(func(l *Limits) { l.TOCCompressed = 100 })},
		{"TOC uncompressed", set(func(l *Limits) { l.TOCUncompressed = 100 })},
		{"entries", set(func(l *Limits) { l.Entries = 10 })},
		{"path length", set(func(l *Limits) { l.PathLen = 64 })},
		{"chunks per file", set(func(l *Limits) { l.ChunksPerFile = 1 })},
	} {
		for _, layer := range []struct {
			blob []byte
			desc ocispec.Descriptor
		}{{es, esDesc}, {zc, zcDesc}} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := Read(context.Background(), &blobReader{b: layer.blob}, layer.desc, tc.opt)
				if !errors.Is(err, ErrTooLarge) || !errdefs.IsResourceExhausted(err) {
					t.Fatalf("%s: err = %v, want ErrTooLarge", layer.desc.MediaType, err)
				}
				t.Log(err)
			})
		}
	}
}

// TestChunkDigestMismatchRefused: a TOC (rightly annotated) whose chunk
// digest is wrong: the file's read fails there, and the writer holds only
// bytes that were verified, a prefix of the file.
func TestChunkDigestMismatchRefused(t *testing.T) {
	tarb := corpusTar(t)
	blob, _ := buildEStargz(t, tarb, estargz.WithChunkSize(64<<10))
	jtoc, off := jtocOf(t, blob)
	for _, tc := range []struct {
		name, file string
		edit       func(es []*estargz.TOCEntry, i int)
	}{
		{"third chunk", "usr/bin/big", func(es []*estargz.TOCEntry, i int) { es[i+2].ChunkDigest = digest.FromString("x").String() }},
		{"file digest", "usr/bin/big", func(es []*estargz.TOCEntry, i int) { es[i].Digest = digest.FromString("x").String() }},
		{"offset of another file", "usr/bin/su", func(es []*estargz.TOCEntry, i int) {
			for _, e := range es {
				if e.Name == "etc/os-release" {
					es[i].Offset = e.Offset
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jtoc, _ := jtocOf(t, blob)
			for i, e := range jtoc.Entries {
				if e.Name == tc.file {
					tc.edit(jtoc.Entries, i)
				}
			}
			hostile, desc := craftEStargz(t, blob[:off], jtoc)
			rr := &blobReader{b: hostile}
			toc, err := Read(context.Background(), rr, desc)
			if err != nil {
				t.Fatal(err)
			}
			want, content := oracle(t, bytes.NewReader(gunzip(t, blob)))
			_ = want
			for i := range toc.Entries {
				e := &toc.Entries[i]
				if e.Path != "/"+tc.file {
					continue
				}
				var b bytes.Buffer
				err := ReadFile(context.Background(), rr, SourceEStargz, e, &b)
				if !errors.Is(err, ErrDigestMismatch) && !errors.Is(err, ErrInvalidTOC) {
					t.Fatalf("err = %v, want ErrDigestMismatch or ErrInvalidTOC", err)
				}
				if b.Len() >= len(content[e.Path]) || !bytes.Equal(b.Bytes(), content[e.Path][:b.Len()]) {
					t.Fatalf("wrote %d bytes of %d: not a strict verified prefix", b.Len(), len(content[e.Path]))
				}
				t.Logf("%v; %d verified bytes written", err, b.Len())
				return
			}
			t.Fatalf("no /%s", tc.file)
		})
	}
	_ = jtoc
}

// truncReader answers every range one byte short.
type truncReader struct{ blobReader }

func (r *truncReader) ReadRange(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	return r.blobReader.ReadRange(ctx, off, n-1)
}

func TestShortRangeResponseIsDataLoss(t *testing.T) {
	blob, desc := buildEStargz(t, corpusTar(t))
	if _, err := Read(context.Background(), &truncReader{blobReader{b: blob}}, desc); !errdefs.IsDataLoss(err) {
		t.Fatalf("Read: err = %v, want DataLoss", err)
	}
	toc, err := Read(context.Background(), &blobReader{b: blob}, desc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range toc.Entries {
		if e := &toc.Entries[i]; e.Path == "/usr/bin/big" {
			err := ReadFile(context.Background(), &truncReader{blobReader{b: blob}}, SourceEStargz, e, io.Discard)
			if err == nil {
				t.Fatal("ReadFile of a short response succeeded")
			}
			t.Log(err)
		}
	}
}

// TestInnerOffsetBombCapped: a chunk placed 1 GiB into a gzip member
// of zeros costs at most the bomb cap's decompression, then fails.
func TestInnerOffsetBombCapped(t *testing.T) {
	prefix := gz(t, make([]byte, 4<<20)) // ~4 KiB
	e := &estargz.TOCEntry{Name: "a", Type: "reg", Size: 5, InnerOffset: 1 << 30, ChunkDigest: digest.FromString("hello").String()}
	blob, desc := craftEStargz(t, prefix, &estargz.JTOC{Version: 1, Entries: []*estargz.TOCEntry{e}})
	rr := &blobReader{b: blob}
	toc, err := Read(context.Background(), rr, desc)
	if err != nil {
		t.Fatal(err)
	}
	lim := DefaultLimits()
	lim.Decompress.Slack, lim.Decompress.Ratio = 1<<20, 2
	err = ReadFile(context.Background(), rr, SourceEStargz, &toc.Entries[0], io.Discard, WithLimits(lim))
	if !errdefs.IsInvalidArgument(err) {
		t.Fatalf("err = %v, want the bomb cap (InvalidArgument)", err)
	}
	t.Log(err)
}

func TestReadFileOfANonFileRefused(t *testing.T) {
	e := &Entry{Path: "/etc", Type: TypeDir}
	if err := ReadFile(context.Background(), &blobReader{}, SourceEStargz, e, io.Discard); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("err = %v, want InvalidArgument", err)
	}
}
