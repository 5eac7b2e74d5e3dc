package graph

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
func putCustomImage(t testing.TB, s *Store, cfg imageConfig, layers [][]byte, tags ...string) *ImageRecord {
	t.Helper()
	ctx := context.Background()
	var descs []ocispec.Descriptor
	for _, lb := range layers {
		d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromBytes(lb), Size: int64(len(lb))}
		if err := s.WriteBlob(ctx, d, bytes.NewReader(lb)); err != nil {
			t.Fatal(err)
		}
		descs = append(descs, d)
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, d.Digest)
	}
	cfg.RootFS.Type = "layers"
	rec, err := s.local.storeImage(ctx, &cfg, descs, false)
	if err != nil {
		t.Fatal(err)
	}
	rec.RepoTags = tags
	if err := s.PutImage(ctx, *rec); err != nil {
		t.Fatal(err)
	}
	got, err := s.Lookup(ctx, rec.ID.String())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func mustJSONText(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
