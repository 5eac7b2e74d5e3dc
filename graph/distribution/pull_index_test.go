package distribution

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/internal/testregistry"
	"github.com/wharfproject/wharf/registry"
)

// countingIndexer is a LayerIndexer that keeps what it was given and
// counts its sessions, commits and aborts.
type countingIndexer struct {
	mu       sync.Mutex
	sessions int
	commits  int
	aborts   int
	got      map[digest.Digest][]byte // committed bytes per layer
	failAt   int                      // the writer fails after this many bytes, when > 0
}

func (c *countingIndexer) IndexLayer(_ context.Context, desc ocispec.Descriptor) (io.Writer, func() error, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions++
	buf := &failingBuffer{failAt: c.failAt}
	return buf, func() error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.commits++
			if c.got == nil {
				c.got = map[digest.Digest][]byte{}
			}
			c.got[desc.Digest] = buf.Bytes()
			return errors.New("the indexer's own failure: never the pull's")
		}, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.aborts++
		}
}

func (c *countingIndexer) counts() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("sessions %d commits %d aborts %d", c.sessions, c.commits, c.aborts)
}

type failingBuffer struct {
	bytes.Buffer
	failAt int
}

func (f *failingBuffer) Write(p []byte) (int, error) {
	if f.failAt > 0 && f.Len()+len(p) > f.failAt {
		return 0, errors.New("index full")
	}
	return f.Buffer.Write(p)
}

// TestPullFeedsIndexer: a download from byte 0 hands the indexer every
// byte and commits after the blob is stored; a failed one aborts; a
// resumed one and a stored blob are not indexed; an indexer that fails
// never fails the pull.
func TestPullFeedsIndexer(t *testing.T) {
	blob := make([]byte, 2<<20)
	rand.Read(blob)
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	pull := func(t *testing.T, s *store.Store, bt *blobTransfers, f blobFetcher) error {
		l := s.NewLease()
		defer l.Release()
		return bt.downloadLayers(context.Background(), f, leaseIngester{l}, []ocispec.Descriptor{desc}, newProgressOutput(&graphtest.Messages{}))
	}

	t.Run("from byte 0", func(t *testing.T) {
		s := graphtest.OpenStore(t, t.TempDir())
		ix := &countingIndexer{}
		bt := newBlobTransfers(Options{Indexer: ix})
		if err := pull(t, s, bt, &rangeFakeFetcher{blob: blob}); err != nil {
			t.Fatal(err)
		}
		if ix.counts() != "sessions 1 commits 1 aborts 0" || !bytes.Equal(ix.got[desc.Digest], blob) {
			t.Fatalf("%s, %d bytes indexed", ix.counts(), len(ix.got[desc.Digest]))
		}
		// Stored now: the next pull downloads nothing and indexes nothing.
		if err := pull(t, s, bt, &rangeFakeFetcher{blob: blob}); err != nil {
			t.Fatal(err)
		}
		if ix.counts() != "sessions 1 commits 1 aborts 0" {
			t.Fatal(ix.counts())
		}
	})

	t.Run("cut, then resumed", func(t *testing.T) {
		s := graphtest.OpenStore(t, t.TempDir())
		ix := &countingIndexer{}
		bt := newBlobTransfers(Options{Indexer: ix})
		f := &rangeFakeFetcher{blob: blob, cut: 1 << 20}
		if err := pull(t, s, bt, f); !errdefs.IsUnavailable(err) {
			t.Fatalf("cut pull: %v", err)
		}
		if ix.counts() != "sessions 1 commits 0 aborts 1" {
			t.Fatal(ix.counts())
		}
		f.cut = 0
		if err := pull(t, s, bt, f); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(f.asked) != fmt.Sprint([]int64{0, 1 << 20}) || ix.counts() != "sessions 1 commits 0 aborts 1" {
			t.Fatalf("asked from %v; %s", f.asked, ix.counts())
		}
	})

	t.Run("wrong bytes", func(t *testing.T) {
		s := graphtest.OpenStore(t, t.TempDir())
		ix := &countingIndexer{}
		bt := newBlobTransfers(Options{Indexer: ix})
		bad := bytes.Clone(blob)
		bad[100] ^= 1
		if err := pull(t, s, bt, plainFetcher{bad}); err == nil {
			t.Fatal("a blob with the wrong digest was stored")
		}
		if ix.counts() != "sessions 1 commits 0 aborts 1" {
			t.Fatal(ix.counts())
		}
	})

	t.Run("indexer fails", func(t *testing.T) {
		s := graphtest.OpenStore(t, t.TempDir())
		ix := &countingIndexer{failAt: 1000}
		bt := newBlobTransfers(Options{Indexer: ix})
		l := s.NewLease()
		defer l.Release()
		if err := bt.downloadLayers(context.Background(), &rangeFakeFetcher{blob: blob}, leaseIngester{l}, []ocispec.Descriptor{desc}, newProgressOutput(&graphtest.Messages{})); err != nil {
			t.Fatalf("the indexer failed the pull: %v", err)
		}
		if !l.Has(desc.Digest) || ix.counts() != "sessions 1 commits 0 aborts 1" {
			t.Fatalf("stored %v, %s", l.Has(desc.Digest), ix.counts())
		}
	})
}

// plainFetcher serves blob whole, unverified: the store verifies.
type plainFetcher struct{ blob []byte }

func (p plainFetcher) FetchBlob(context.Context, ocispec.Descriptor) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(p.blob)), nil
}

// TestPullFeedsIndexerFromRealRegistry: the layers of an image pulled from
// the distribution registry reach the indexer whole, once each.
func TestPullFeedsIndexerFromRealRegistry(t *testing.T) {
	reg := testregistry.StartForTest(t, testregistry.Options{})
	ctx := context.Background()
	img, err := testregistry.NewImage(testregistry.ImageOptions{Layers: 3, LayerSize: 300 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Client().PushImage(ctx, "index/app", "1.0", img); err != nil {
		t.Fatal(err)
	}
	svc, err := registry.NewService(registry.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := reference.ParseNormalizedNamed(reg.Host + "/index/app")
	repo, err := svc.Repository(ctx, n, registry.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	var layers []ocispec.Descriptor
	for _, l := range img.Layers {
		layers = append(layers, ocispec.Descriptor{MediaType: l.MediaType, Digest: digest.Digest(l.Digest), Size: int64(len(l.Data))})
	}
	s := graphtest.OpenStore(t, t.TempDir())
	ix := &countingIndexer{}
	bt := newBlobTransfers(Options{Indexer: ix})
	l := s.NewLease()
	defer l.Release()
	if err := bt.downloadLayers(ctx, repo, leaseIngester{l}, layers, newProgressOutput(&graphtest.Messages{})); err != nil {
		t.Fatal(err)
	}
	if ix.counts() != "sessions 3 commits 3 aborts 0" {
		t.Fatal(ix.counts())
	}
	for _, l := range img.Layers {
		if !bytes.Equal(ix.got[digest.Digest(l.Digest)], l.Data) {
			t.Fatalf("layer %s: %d bytes indexed of %d", l.Digest, len(ix.got[digest.Digest(l.Digest)]), len(l.Data))
		}
	}
}
