package archive

import (
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
)

// newLocalTestStore is an Archiver on a new store (s.st), its events
// recorded.
func newLocalTestStore(t testing.TB) (*Archiver, *graphtest.EventRecorder) {
	t.Helper()
	return openLocalTestStore(t, t.TempDir())
}

func openLocalTestStore(t testing.TB, root string) (*Archiver, *graphtest.EventRecorder) {
	t.Helper()
	ev := &graphtest.EventRecorder{}
	return New(graphtest.OpenStore(t, root), graphtest.Platform(), ev, nil), ev
}

// tagTestImage points repo:tag at the image name, as docker tag does.
func tagTestImage(t testing.TB, s *Archiver, name, repo, tag string) {
	t.Helper()
	ref, err := store.ParseNewTag(repo, tag)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.st.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.st.Update(false, func(tx *store.Txn) error { return tx.PointRef(ref.String(), rec.ID) }); err != nil {
		t.Fatal(err)
	}
}

// testImageView is what the store holds of one image: everything an
// inspect is built from, without the times each store recorded and tagged
// it.
type testImageView struct {
	Record    store.ImageRecord
	Manifest  ocispec.Manifest
	RawConfig string
	Size      int64
}

// imageView looks name up and returns its testImageView as JSON.
func imageView(t testing.TB, s *Archiver, name string) string {
	t.Helper()
	rec, m := imageMeta(t, s, name)
	v := testImageView{Record: *rec, Manifest: m.Manifest, RawConfig: string(m.RawConfig), Size: m.Size}
	v.Record.LastTagTime, v.Record.Created = time.Time{}, time.Time{}
	return graphtest.JSONText(t, v)
}

// imageConfig is the parsed config of the image name.
func imageConfig(t testing.TB, s *Archiver, name string) (*store.ImageRecord, *store.ImageConfig) {
	t.Helper()
	rec, m := imageMeta(t, s, name)
	return rec, m.Config
}

// imageMeta looks name up and returns its record and metadata.
func imageMeta(t testing.TB, s *Archiver, name string) (*store.ImageRecord, *store.ImageMeta) {
	t.Helper()
	rec, err := s.st.Lookup(name)
	if err != nil {
		t.Fatalf("Lookup(%s): %v", name, err)
	}
	m, err := s.st.Meta(rec)
	if err != nil {
		t.Fatalf("Meta(%s): %v", name, err)
	}
	return rec, m
}
