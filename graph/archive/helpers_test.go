package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
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

// newLocalTestStore is an Archiver on a new store (s.st), its events
// recorded.
func newLocalTestStore(t testing.TB) (*Archiver, *testEventRecorder) {
	t.Helper()
	return openLocalTestStore(t, t.TempDir())
}

func openLocalTestStore(t testing.TB, root string) (*Archiver, *testEventRecorder) {
	t.Helper()
	ev := &testEventRecorder{}
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	st, err := store.Open(context.Background(), store.Options{Root: root, Logger: logrus.NewEntry(log)})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return New(st, localTestPlatform(), ev), ev
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
func importTestImage(t testing.TB, s *Archiver, repo, content string, changes ...string) digest.Digest {
	t.Helper()
	var id string
	out := types.ProgressFunc(func(m jsonstream.Message) error { id = m.Status; return nil })
	rootfs := makeTestTar(t, testTarEntry{name: "etc/", typeflag: tar.TypeDir}, testTarEntry{name: "etc/hello", body: content})
	if err := s.ImportImage(context.Background(), bytes.NewReader(rootfs), types.ImportOptions{Repo: repo, Changes: changes, Message: "test import"}, out); err != nil {
		t.Fatalf("ImportImage(%s): %v", repo, err)
	}
	return digest.Digest(id)
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
	rec, err := s.st.Lookup(name)
	if err != nil {
		t.Fatalf("Lookup(%s): %v", name, err)
	}
	m, err := s.st.Meta(rec)
	if err != nil {
		t.Fatalf("Meta(%s): %v", name, err)
	}
	v := testImageView{Record: *rec, Manifest: m.Manifest, RawConfig: string(m.RawConfig), Size: m.Size}
	v.Record.LastTagTime, v.Record.Created = time.Time{}, time.Time{}
	return mustJSONText(t, v)
}

// imageConfig is the parsed config of the image name.
func imageConfig(t testing.TB, s *Archiver, name string) (*store.ImageRecord, *store.ImageConfig) {
	t.Helper()
	rec, err := s.st.Lookup(name)
	if err != nil {
		t.Fatalf("Lookup(%s): %v", name, err)
	}
	m, err := s.st.Meta(rec)
	if err != nil {
		t.Fatalf("Meta(%s): %v", name, err)
	}
	return rec, m.Config
}

func mustJSONText(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
