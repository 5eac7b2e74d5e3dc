package layertoc

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/containerd/stargz-snapshotter/estargz"
	"github.com/klauspost/compress/zstd"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// checkLayer lists the layer from its TOC in at most maxReq requests,
// compares the listing with archive/tar's reading of the decompressed
// layer, then reads every file through its chunks, one request each.
func checkLayer(t *testing.T, blob []byte, desc ocispec.Descriptor, plain []byte, src Source, maxReq int64, opts ...Option) {
	t.Helper()
	ctx := context.Background()
	rr := &blobReader{b: blob}
	toc, err := Read(ctx, rr, desc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if n := rr.calls.Load(); n > maxReq {
		t.Errorf("listing took %d requests, want ≤ %d", n, maxReq)
	}
	if toc.Source != src || toc.Layer != desc.Digest {
		t.Errorf("Source %q Layer %s, want %q %s", toc.Source, toc.Layer, src, desc.Digest)
	}
	want, content := oracle(t, bytes.NewReader(plain))
	sameEntries(t, toc.Entries, want)
	for i := range toc.Entries {
		e := &toc.Entries[i]
		if e.Type != TypeFile {
			continue
		}
		rr.calls.Store(0)
		var b bytes.Buffer
		if err := ReadFile(ctx, rr, src, e, &b, opts...); err != nil {
			t.Errorf("ReadFile(%s): %v", e.Path, err)
			continue
		}
		if !bytes.Equal(b.Bytes(), content[e.Path]) {
			t.Errorf("ReadFile(%s): %d bytes differ from the tar's %d", e.Path, b.Len(), len(content[e.Path]))
		}
		if n, max := rr.calls.Load(), int64(min(len(e.Chunks), 1)); n > max {
			t.Errorf("ReadFile(%s) of %d chunks took %d requests, want %d", e.Path, len(e.Chunks), n, max)
		}
	}
}

func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func unzstd(t testing.TB, b []byte) []byte {
	t.Helper()
	zd, err := zstd.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer zd.Close()
	var out bytes.Buffer
	if _, err := out.ReadFrom(zd); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestEStargzListingEqualsTarAndFilesReadByChunk(t *testing.T) {
	tarb := corpusTar(t)
	small := DefaultLimits()
	small.TailSize = 64 // the footer alone: the TOC takes a second request
	for _, tc := range []struct {
		name   string
		opts   []estargz.Option
		lim    []Option
		maxReq int64
	}{
		{"one chunk per member", []estargz.Option{estargz.WithChunkSize(64 << 10)}, nil, 1},
		{"small files packed in one member", []estargz.Option{estargz.WithChunkSize(32 << 10), estargz.WithMinChunkSize(16 << 10)}, nil, 1},
		{"default chunks, tail misses the TOC", nil, []Option{WithLimits(small)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blob, desc := buildEStargz(t, tarb, tc.opts...)
			checkLayer(t, blob, desc, gunzip(t, blob), SourceEStargz, tc.maxReq, tc.lim...)
		})
	}
}

func TestZstdChunkedListingEqualsTarAndFilesReadByChunk(t *testing.T) {
	blob, desc := buildZstdChunked(t, corpusTar(t))
	checkLayer(t, blob, desc, unzstd(t, blob), SourceZstdChunked, 1)
}

// TestInnerOffsetChunksShareAMember: the packed build really puts
// several chunks in one gzip member, so innerOffset is exercised.
func TestInnerOffsetChunksShareAMember(t *testing.T) {
	blob, desc := buildEStargz(t, corpusTar(t), estargz.WithChunkSize(32<<10), estargz.WithMinChunkSize(16<<10))
	toc, err := Read(context.Background(), &blobReader{b: blob}, desc)
	if err != nil {
		t.Fatal(err)
	}
	inner := 0
	for _, e := range toc.Entries {
		for _, c := range e.Chunks {
			if c.InnerOffset > 0 {
				inner++
			}
		}
	}
	if inner == 0 {
		t.Fatal("no chunk with an inner offset")
	}
}

func TestNoAnnotationMakesNoRequest(t *testing.T) {
	blob, desc := buildEStargz(t, corpusTar(t))
	desc.Annotations = nil
	rr := &blobReader{b: blob}
	_, err := Read(context.Background(), rr, desc)
	if !errors.Is(err, ErrNoTOC) || !errdefs.IsNotFound(err) {
		t.Fatalf("err = %v, want ErrNoTOC (NotFound)", err)
	}
	if rr.calls.Load() != 0 {
		t.Fatalf("%d requests for a layer without a TOC annotation", rr.calls.Load())
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name string
		mt   string
		ann  map[string]string
		want Source
		err  error
	}{
		{"none", ocispec.MediaTypeImageLayerGzip, nil, "", ErrNoTOC},
		{"estargz", ocispec.MediaTypeImageLayerGzip, map[string]string{AnnotationEStargzTOCDigest: "x"}, SourceEStargz, nil},
		{"estargz docker", "application/vnd.docker.image.rootfs.diff.tar.gzip", map[string]string{AnnotationEStargzTOCDigest: "x"}, SourceEStargz, nil},
		{"estargz on zstd", ocispec.MediaTypeImageLayerZstd, map[string]string{AnnotationEStargzTOCDigest: "x"}, "", ErrInvalidTOC},
		{"zstd:chunked", ocispec.MediaTypeImageLayerZstd, map[string]string{AnnotationZstdChunkedChecksum: "x", AnnotationZstdChunkedPosition: "y"}, SourceZstdChunked, nil},
		{"zstd:chunked on gzip", ocispec.MediaTypeImageLayerGzip, map[string]string{AnnotationZstdChunkedChecksum: "x", AnnotationZstdChunkedPosition: "y"}, "", ErrInvalidTOC},
		{"zstd:chunked half", ocispec.MediaTypeImageLayerZstd, map[string]string{AnnotationZstdChunkedChecksum: "x"}, "", ErrInvalidTOC},
		{"both", "", map[string]string{AnnotationEStargzTOCDigest: "x", AnnotationZstdChunkedChecksum: "x", AnnotationZstdChunkedPosition: "y"}, "", ErrInvalidTOC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Detect(ocispec.Descriptor{MediaType: tc.mt, Annotations: tc.ann})
			if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("Detect = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}
