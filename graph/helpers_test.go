package graph

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
)

// testRecordedEvent is one event seen by testEventRecorder.
type testRecordedEvent struct {
	Actor  string
	Action events.Action
	Attrs  map[string]string
}

type testEventRecorder struct {
	mu  sync.Mutex
	evs []testRecordedEvent
}

func (r *testEventRecorder) LogImageEvent(ctx context.Context, actor string, action events.Action, attrs map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, testRecordedEvent{actor, action, attrs})
}

func (r *testEventRecorder) actions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.evs {
		out = append(out, string(e.Action))
	}
	return out
}

func localTestPlatform() ocispec.Platform {
	return ocispec.Platform{OS: "linux", Architecture: "amd64"}
}

func newLocalTestStore(t testing.TB) (*Store, *testEventRecorder) {
	t.Helper()
	return openLocalTestStore(t, t.TempDir())
}

func openLocalTestStore(t testing.TB, root string) (*Store, *testEventRecorder) {
	t.Helper()
	ev := &testEventRecorder{}
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	s, err := New(context.Background(), Options{Root: root, Events: ev, Platform: localTestPlatform(), Logger: logrus.NewEntry(log)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ev
}

type testTarEntry struct {
	name     string
	body     string
	typeflag byte
	linkname string
}

func makeTestTar(t testing.TB, entries ...testTarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: e.typeflag, Linkname: e.linkname, ModTime: time.Unix(0, 0)}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if hdr.Typeflag == tar.TypeDir {
			hdr.Mode = 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// importTestImage imports a one-file rootfs (content makes the layer
// unique) tagged repo (may be empty) and returns the image ID.
func importTestImage(t testing.TB, s *Store, repo, content string, changes ...string) digest.Digest {
	t.Helper()
	var id string
	out := types.ProgressFunc(func(m jsonstream.Message) error { id = m.Status; return nil })
	rootfs := makeTestTar(t, testTarEntry{name: "etc/", typeflag: tar.TypeDir}, testTarEntry{name: "etc/hello", body: content})
	if err := s.ImportImage(context.Background(), bytes.NewReader(rootfs), types.ImportOptions{Repo: repo, Changes: changes, Message: "test import"}, out); err != nil {
		t.Fatalf("ImportImage(%s): %v", repo, err)
	}
	return digest.Digest(id)
}

// putCustomImage stores an image with the given config and raw layers and
// records it with tags.
func putCustomImage(t testing.TB, s *Store, cfg store.ImageConfig, layers [][]byte, tags ...string) *ImageRecord {
	t.Helper()
	ctx := context.Background()
	lease := s.st.NewLease()
	defer lease.Release()
	var descs []ocispec.Descriptor
	for _, lb := range layers {
		d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromBytes(lb), Size: int64(len(lb))}
		if _, err := lease.WriteBlob(ctx, d, bytes.NewReader(lb)); err != nil {
			t.Fatal(err)
		}
		descs = append(descs, d)
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, d.Digest)
	}
	cfg.RootFS.Type = "layers"
	rec := writeOCIImage(t, lease, &cfg, descs)
	rec.RepoTags = tags
	if err := s.st.Put(lease, rec); err != nil {
		t.Fatal(err)
	}
	got, err := s.Lookup(ctx, rec.ID.String())
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
	ctx := context.Background()
	cb, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cdesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(cb), Size: int64(len(cb))}
	if _, err := lease.WriteBlob(ctx, cdesc, bytes.NewReader(cb)); err != nil {
		t.Fatal(err)
	}
	if layers == nil {
		layers = []ocispec.Descriptor{}
	}
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, Config: cdesc, Layers: layers}
	mb, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	mdesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(mb), Size: int64(len(mb))}
	if _, err := lease.WriteBlob(ctx, mdesc, bytes.NewReader(mb)); err != nil {
		t.Fatal(err)
	}
	return ImageRecord{ID: cdesc.Digest, Target: mdesc, Manifest: mdesc, RepoTags: []string{}, RepoDigests: []string{}}
}

// putRecord records rec (whose blobs are stored) as an operation does: a
// lease pins its blobs for the Put and is released after it.
func putRecord(t testing.TB, s *Store, rec ImageRecord) {
	t.Helper()
	lease := s.st.NewLease()
	defer lease.Release()
	if err := s.st.Put(lease, rec); err != nil {
		t.Fatal(err)
	}
}

// writeTestBlob stores b as a blob of media type mt, kept alive by the
// returned lease until the caller releases it (or a record uses it).
func writeTestBlob(t testing.TB, s *Store, mt string, b []byte) (ocispec.Descriptor, *store.Lease) {
	t.Helper()
	lease := s.st.NewLease()
	d := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
	if _, err := lease.WriteBlob(context.Background(), d, bytes.NewReader(b)); err != nil {
		lease.Release()
		t.Fatal(err)
	}
	return d, lease
}

// imageBlobs lists the blobs rec names: target, manifest, config, layers.
func imageBlobs(t testing.TB, s *Store, rec *ImageRecord) []digest.Digest {
	t.Helper()
	m, err := s.st.Meta(rec)
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
func openSeededStore(t testing.TB, recs []*ImageRecord) *Store {
	t.Helper()
	root := t.TempDir()
	b, err := json.Marshal(map[string]any{"version": 1, "images": recs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "wharf"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "wharf", "images.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := openLocalTestStore(t, root)
	if s.Count() != len(recs) {
		t.Fatalf("seeded store holds %d images, want %d", s.Count(), len(recs))
	}
	return s
}

func mustJSONText(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
