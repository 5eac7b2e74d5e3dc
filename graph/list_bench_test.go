package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
)

// GET /images/json at scale (issue 22): BenchmarkImagesList50000 lists
// 50,000 images (half of them tagged, each its own config and manifest,
// three shared layers), BenchmarkImagesList50000NoMatch the same with a
// label filter that keeps none. The data-root is written once per process
// (blobs as files, the records as a version-1 images.json, migrated by the
// first open) and opened by every run; only the listing is timed.

var listRoots sync.Map // n → root

// TestMain removes the list benchmarks' data-roots (shared by their runs).
func TestMain(m *testing.M) {
	code := m.Run()
	listRoots.Range(func(_, root any) bool {
		os.RemoveAll(root.(string))
		return true
	})
	os.Exit(code)
}

func listBenchRoot(b *testing.B, n int) string {
	if r, ok := listRoots.Load(n); ok {
		return r.(string)
	}
	root, err := os.MkdirTemp("", "wharf-list-bench")
	if err != nil {
		b.Fatal(err)
	}
	blobDir := filepath.Join(root, store.BlobsDir, "sha256")
	if err := os.MkdirAll(blobDir, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "wharf"), 0o700); err != nil {
		b.Fatal(err)
	}
	write := func(mt string, v any) ocispec.Descriptor {
		raw, ok := v.([]byte)
		if !ok {
			var err error
			if raw, err = json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
		d := digest.FromBytes(raw)
		if err := os.WriteFile(filepath.Join(blobDir, d.Encoded()), raw, 0o600); err != nil {
			b.Fatal(err)
		}
		return ocispec.Descriptor{MediaType: mt, Digest: d, Size: int64(len(raw))}
	}
	var layers []ocispec.Descriptor
	var diffIDs []digest.Digest
	for i := 0; i < 3; i++ {
		l := write(ocispec.MediaTypeImageLayer, []byte(fmt.Sprint("layer ", i)))
		layers = append(layers, l)
		diffIDs = append(diffIDs, l.Digest)
	}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]*ImageRecord, 0, n)
	for i := 0; i < n; i++ {
		created := base.Add(time.Duration(i) * time.Second)
		cfg := ocispec.Image{
			Created:  &created,
			Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"},
			Config:   ocispec.ImageConfig{Labels: map[string]string{"app": fmt.Sprint("img", i), "team": "bench"}, Cmd: []string{"serve"}},
			RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: diffIDs},
		}
		c := write(ocispec.MediaTypeImageConfig, cfg)
		m := write(ocispec.MediaTypeImageManifest, ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2},
			MediaType: ocispec.MediaTypeImageManifest, Config: c, Layers: layers})
		rec := &ImageRecord{ID: c.Digest, Target: m, Manifest: m, RepoTags: []string{}, RepoDigests: []string{}, Created: created}
		if i%2 == 0 {
			rec.RepoTags = []string{fmt.Sprintf("docker.io/library/img%d:latest", i)}
			rec.RepoDigests = []string{fmt.Sprintf("docker.io/library/img%d@%s", i, m.Digest)}
		}
		recs = append(recs, rec)
	}
	doc, err := json.Marshal(map[string]any{"version": 1, "images": recs})
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "wharf", "images.json"), doc, 0o600); err != nil {
		b.Fatal(err)
	}
	listRoots.Store(n, root)
	return root
}

func benchmarkList(b *testing.B, n int, opts types.ImageListOptions, want int) {
	s, _ := openTestStore(b, Options{Root: listBenchRoot(b, n)})
	if c := s.images.Count(); c != n {
		b.Fatalf("store holds %d images, want %d", c, n)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, err := s.Images(context.Background(), opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != want {
			b.Fatalf("listed %d images, want %d", len(got), want)
		}
	}
}

func BenchmarkImagesList50000(b *testing.B) {
	benchmarkList(b, 50000, types.ImageListOptions{All: true}, 50000)
}

func BenchmarkImagesList50000NoMatch(b *testing.B) {
	benchmarkList(b, 50000, types.ImageListOptions{All: true, Filters: types.Filters{"label": {"app=none": true}}}, 0)
}

// BenchmarkImagesList50000Reference10 lists the 10 images two reference
// globs match (img2000? and img4000?: the tagged img20000…img20008 and
// img40000…img40008), BenchmarkImagesList50000Label1 the one image of
// label app=img7: both answered from the indexes (graph/store/listindex.go).
func BenchmarkImagesList50000Reference10(b *testing.B) {
	benchmarkList(b, 50000, types.ImageListOptions{All: true, Filters: types.Filters{"reference": {"img2000?": true, "img4000?": true}}}, 10)
}

func BenchmarkImagesList50000Label1(b *testing.B) {
	benchmarkList(b, 50000, types.ImageListOptions{All: true, Filters: types.Filters{"label": {"app=img7": true}}}, 1)
}

// BenchmarkImagesList50000RefGlobFirst is a reference glob no index can
// narrow (*img8: the walk), the cost the indexes do not remove.
func BenchmarkImagesList50000RefGlobFirst(b *testing.B) {
	benchmarkList(b, 50000, types.ImageListOptions{All: true, Filters: types.Filters{"reference": {"*img8": true}}}, 1)
}

// BenchmarkSummariesFill50000 is the upgrade of a 50,000-image meta.db
// written before the summaries bucket: the open that fills it (one write
// transaction reading every manifest and config).
func BenchmarkSummariesFill50000(b *testing.B) { benchmarkOpen(b, true) }

// BenchmarkOpen50000 is the same open with the summaries in place: what
// the fill adds is the difference.
func BenchmarkOpen50000(b *testing.B) { benchmarkOpen(b, false) }

func benchmarkOpen(b *testing.B, drop bool) {
	root := listBenchRoot(b, 50000)
	open := func() *Service {
		s, err := New(context.Background(), Options{Root: root, Logger: graphtest.QuietLogger(), Platform: graphtest.Platform(), Events: &graphtest.EventRecorder{}})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	open().Close() // the migration of a new root, not timed
	b.ResetTimer()
	for i := 0; i < b.N && !drop; i++ {
		open().Close()
	}
	for i := 0; i < b.N && drop; i++ {
		b.StopTimer()
		db, err := bolt.Open(filepath.Join(root, "wharf", "meta.db"), 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		err = db.Update(func(btx *bolt.Tx) error {
			if btx.Bucket([]byte("summaries")) != nil {
				if err := btx.DeleteBucket([]byte("summaries")); err != nil {
					return err
				}
			}
			return btx.Bucket([]byte("meta")).Delete([]byte("sumgen"))
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		s := open()
		b.StopTimer()
		if s.images.Count() != 50000 {
			b.Fatalf("Count = %d", s.images.Count())
		}
		s.Close()
		b.StartTimer()
	}
}

// BenchmarkMigrate50000 is the v1 → v2 migration of 50,000 images (half
// of them tagged, three layers shared by all): each run puts the root
// back to its version-1 images.json and opens it.
func BenchmarkMigrate50000(b *testing.B) {
	root := listBenchRoot(b, 50000)
	wharf := filepath.Join(root, "wharf")
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if v1, err := os.ReadFile(filepath.Join(wharf, "images.json.v1")); err == nil {
			if err := os.Remove(filepath.Join(wharf, "meta.db")); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(wharf, "images.json"), v1, 0o600); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		s, err := New(context.Background(), Options{Root: root, Logger: graphtest.QuietLogger(), Platform: graphtest.Platform(), Events: &graphtest.EventRecorder{}})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if c := s.images.Count(); c != 50000 {
			b.Fatalf("Count = %d", c)
		}
		s.Close()
		b.StartTimer()
	}
}

// BenchmarkImagesList50000LabelAll is an indexed filter every image
// passes (team=bench): the index is given up after a quarter of the store
// and the list walks; beside BenchmarkImagesList50000 it is what the
// attempt costs.
func BenchmarkImagesList50000LabelAll(b *testing.B) {
	benchmarkList(b, 50000, types.ImageListOptions{All: true, Filters: types.Filters{"label": {"team=bench": true}}}, 50000)
}
