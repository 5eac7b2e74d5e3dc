package contents

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/stargz-snapshotter/estargz"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/storage/pkg/chunked/compressor"

	"github.com/wharfproject/wharf/internal/layertoc"
)

// memBlobs is an in-memory Blobs that counts what it is asked. Open
// verifies the digest at EOF as the registry client and the store do;
// corrupt serves other bytes under a digest.
type memBlobs struct {
	mu        sync.Mutex
	blobs     map[digest.Digest][]byte
	corrupt   map[digest.Digest][]byte
	local     bool
	opens     atomic.Int64
	ranges    atomic.Int64
	rangeLens []int64 // the lengths ReadRange was asked for
	// gate, when set, holds every Open until it is closed.
	gate chan struct{}
}

func newMemBlobs(local bool) *memBlobs {
	return &memBlobs{blobs: map[digest.Digest][]byte{}, corrupt: map[digest.Digest][]byte{}, local: local}
}

func (m *memBlobs) add(b []byte, desc ocispec.Descriptor) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blobs[desc.Digest] = b
}

func (m *memBlobs) bytesOf(d digest.Digest) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.corrupt[d]; ok {
		return b, nil
	}
	b, ok := m.blobs[d]
	if !ok {
		return nil, fmt.Errorf("blob %s not found", d)
	}
	return b, nil
}

func (m *memBlobs) Open(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	m.opens.Add(1)
	if m.gate != nil {
		select {
		case <-m.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	b, err := m.bytesOf(desc.Digest)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(&verifying{r: bytes.NewReader(b), d: desc.Digest, h: desc.Digest.Algorithm().Digester()}), nil
}

type verifying struct {
	r io.Reader
	d digest.Digest
	h digest.Digester
}

func (v *verifying) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Hash().Write(p[:n])
	if err == io.EOF && v.h.Digest() != v.d {
		return n, fmt.Errorf("digest mismatch: got %s want %s", v.h.Digest(), v.d)
	}
	return n, err
}

func (m *memBlobs) ReadRange(ctx context.Context, desc ocispec.Descriptor, off, n int64) (io.ReadCloser, error) {
	m.ranges.Add(1)
	m.mu.Lock()
	m.rangeLens = append(m.rangeLens, n)
	m.mu.Unlock()
	b, err := m.bytesOf(desc.Digest)
	if err != nil {
		return nil, err
	}
	if off < 0 || off > int64(len(b)) {
		return nil, fmt.Errorf("range %d out of %d", off, len(b))
	}
	end := min(off+n, int64(len(b)))
	return io.NopCloser(bytes.NewReader(b[off:end])), nil
}

func (m *memBlobs) Local(ocispec.Descriptor) bool { return m.local }

// tent is one tar entry of a test layer.
type tent struct {
	name, body, link string
	typ              byte
	mode             int64
}

func tfile(name, body string) tent {
	return tent{name: name, body: body, typ: tar.TypeReg, mode: 0o644}
}
func tdir(name string) tent      { return tent{name: name, typ: tar.TypeDir, mode: 0o755} }
func tsym(name, to string) tent  { return tent{name: name, link: to, typ: tar.TypeSymlink, mode: 0o777} }
func tlink(name, to string) tent { return tent{name: name, link: to, typ: tar.TypeLink, mode: 0o644} }

var testTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func tarOf(t testing.TB, ents ...tent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode, ModTime: testTime, Format: tar.FormatPAX}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipOf(t testing.TB, raw []byte) ([]byte, ocispec.Descriptor) {
	t.Helper()
	var buf bytes.Buffer
	// BestSpeed: what the tests read is the layer's structure, and the
	// default level costs seconds on their megabytes of random bytes
	// under -race.
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	return b, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromBytes(b), Size: int64(len(b))}
}

func estargzOf(t testing.TB, raw []byte) ([]byte, ocispec.Descriptor) {
	t.Helper()
	blob, err := estargz.Build(io.NewSectionReader(bytes.NewReader(raw), 0, int64(len(raw))))
	if err != nil {
		t.Fatal(err)
	}
	defer blob.Close()
	b, err := io.ReadAll(blob)
	if err != nil {
		t.Fatal(err)
	}
	return b, ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromBytes(b), Size: int64(len(b)),
		Annotations: map[string]string{layertoc.AnnotationEStargzTOCDigest: blob.TOCDigest().String()},
	}
}

func zstdChunkedOf(t testing.TB, raw []byte) ([]byte, ocispec.Descriptor) {
	t.Helper()
	var b bytes.Buffer
	ann := map[string]string{}
	w, err := compressor.ZstdCompressor(&b, ann, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerZstd, Digest: digest.FromBytes(b.Bytes()), Size: int64(b.Len()), Annotations: ann}
}

// imageOf is an image of the given layers (blob, descriptor pairs) over
// blobs, its manifest digest made of the layers' digests.
func imageOf(blobs *memBlobs, layers ...layerBlob) *Image {
	img := &Image{Blobs: blobs}
	var key string
	for _, l := range layers {
		blobs.add(l.b, l.desc)
		img.Layers = append(img.Layers, l.desc)
		key += l.desc.Digest.String()
	}
	img.Manifest = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString(key)}
	return img
}

type layerBlob struct {
	b    []byte
	desc ocispec.Descriptor
}

func lb(b []byte, d ocispec.Descriptor) layerBlob { return layerBlob{b, d} }

func newRoom(t testing.TB, dir string, budget int64) *Room {
	t.Helper()
	r, err := New(Options{Dir: dir, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
