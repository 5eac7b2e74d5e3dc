package graph

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
)

// tagAs tags name as repo:tag the way a caller holding strings does: one
// parse (store.ParseNewTag), then TagImage with the parsed reference.
func tagAs(ctx context.Context, s *Service, name, repo, tag string) error {
	ref, err := store.ParseNewTag(repo, tag)
	if err != nil {
		return err
	}
	return s.TagImage(ctx, name, ref)
}

// newLocalTestStore is a Store on a new root, its events recorded.
func newLocalTestStore(t testing.TB) (*Service, *graphtest.EventRecorder) {
	t.Helper()
	return openTestStore(t, Options{Root: t.TempDir()})
}

// openTestStore opens a Store with opts, filling in what every test store
// has: its events recorded, the test platform, a quiet logger.
func openTestStore(t testing.TB, opts Options) (*Service, *graphtest.EventRecorder) {
	t.Helper()
	ev := &graphtest.EventRecorder{}
	opts.Events, opts.Platform, opts.Logger = ev, graphtest.Platform(), graphtest.QuietLogger()
	s, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ev
}

// putCustomImage stores an image with the given config and raw layers and
// records it with tags.
func putCustomImage(t testing.TB, s *Service, cfg store.ImageConfig, layers [][]byte, tags ...string) *ImageRecord {
	t.Helper()
	lease := s.images.NewLease()
	defer lease.Release()
	var descs []ocispec.Descriptor
	for _, lb := range layers {
		d := graphtest.WriteBlob(t, lease, ocispec.MediaTypeImageLayer, lb)
		descs = append(descs, d)
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, d.Digest)
	}
	cfg.RootFS.Type = "layers"
	rec := writeOCIImage(t, lease, &cfg, descs)
	rec.RepoTags = tags
	if err := s.images.Put(lease, rec); err != nil {
		t.Fatal(err)
	}
	got, err := s.images.Lookup(rec.ID.String())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// writeOCIImage writes cfg and an OCI manifest naming it and layers
// (stored already) under lease, as an import does, and returns the record
// to put (no references yet).
func writeOCIImage(t testing.TB, lease *store.Lease, cfg *store.ImageConfig, layers []ocispec.Descriptor) ImageRecord {
	t.Helper()
	cdesc := graphtest.WriteJSON(t, lease, ocispec.MediaTypeImageConfig, cfg)
	if layers == nil {
		layers = []ocispec.Descriptor{}
	}
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, Config: cdesc, Layers: layers}
	mdesc := graphtest.WriteJSON(t, lease, ocispec.MediaTypeImageManifest, m)
	return ImageRecord{ID: cdesc.Digest, Target: mdesc, Manifest: mdesc, RepoTags: []string{}, RepoDigests: []string{}}
}

// putRecord records rec (whose blobs are stored) as an operation does: a
// lease pins its blobs for the Put and is released after it.
func putRecord(t testing.TB, s *Service, rec ImageRecord) {
	t.Helper()
	lease := s.images.NewLease()
	defer lease.Release()
	if err := s.images.Put(lease, rec); err != nil {
		t.Fatal(err)
	}
}

// writeTestBlob stores b as a blob of media type mt, kept alive by the
// returned lease until the caller releases it (or a record uses it).
func writeTestBlob(t testing.TB, s *Service, mt string, b []byte) (ocispec.Descriptor, *store.Lease) {
	t.Helper()
	lease := s.images.NewLease()
	return graphtest.WriteBlob(t, lease, mt, b), lease
}

// imageBlobs lists the blobs rec names: target, manifest, config, layers.
func imageBlobs(t testing.TB, s *Service, rec *ImageRecord) []digest.Digest {
	t.Helper()
	m, err := s.images.Meta(rec)
	if err != nil {
		t.Fatal(err)
	}
	out := []digest.Digest{rec.Target.Digest, rec.Manifest.Digest, rec.ID}
	for _, l := range m.Manifest.Layers {
		out = append(out, l.Digest)
	}
	return out
}

// openSeededStore opens a store at a new root whose image records are recs
// (written to wharf/images.json before the store opens; the records need
// no blobs for lookups and tags).
func openSeededStore(t testing.TB, recs []*ImageRecord) *Service {
	t.Helper()
	root := t.TempDir()
	b := []byte(graphtest.JSONText(t, map[string]any{"version": 1, "images": recs}))
	if err := os.MkdirAll(filepath.Join(root, "wharf"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "wharf", "images.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := openTestStore(t, Options{Root: root})
	if s.Count() != len(recs) {
		t.Fatalf("seeded store holds %d images, want %d", s.Count(), len(recs))
	}
	return s
}
