package graph

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfproject/wharf/api/types"
)

func checkKinds(rep *CheckReport) []string {
	var out []string
	for _, p := range rep.Problems {
		out = append(out, p.Kind+" "+p.Object)
	}
	return out
}

func TestCheckHealthyStoreHasNoProblems(t *testing.T) {
	s, _ := newLocalTestStore(t)
	importTestImage(t, s, "a:1", "one")
	importTestImage(t, s, "b:1", "two")
	for _, full := range []bool{false, true} {
		rep, err := s.Check(context.Background(), full)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) != 0 || rep.Images != 2 || rep.Blobs < 6 {
			t.Fatalf("full=%v: %+v", full, rep)
		}
	}
}

// Each case damages one file of a stored image and names the problem the
// check must report (and whether the cheap check sees it).
func TestCheckFindsDamage(t *testing.T) {
	cases := []struct {
		name      string
		damage    func(t *testing.T, s *Store, rec *ImageRecord) string // returns the object expected
		kind      string
		cheapSees bool
	}{
		{"missing layer", func(t *testing.T, s *Store, rec *ImageRecord) string {
			m, _ := s.local.metaFor(rec)
			d := m.manifest.Layers[0].Digest
			checkMust(t, os.Remove(s.local.blobPath(d)))
			return d.String()
		}, ProblemMissingBlob, true},
		{"truncated layer", func(t *testing.T, s *Store, rec *ImageRecord) string {
			m, _ := s.local.metaFor(rec)
			d := m.manifest.Layers[0].Digest
			checkMust(t, os.Truncate(s.local.blobPath(d), 3))
			return d.String()
		}, ProblemSizeMismatch, true},
		{"flipped byte in config", func(t *testing.T, s *Store, rec *ImageRecord) string {
			p := s.local.blobPath(rec.ID)
			b, err := os.ReadFile(p)
			checkMust(t, err)
			b[len(b)/2] ^= 1
			checkMust(t, os.WriteFile(p, b, 0o644))
			return rec.ID.String()
		}, ProblemDigestMismatch, false},
		{"missing config", func(t *testing.T, s *Store, rec *ImageRecord) string {
			checkMust(t, os.Remove(s.local.blobPath(rec.ID)))
			return rec.ID.String()
		}, ProblemMissingBlob, true},
		{"stray file", func(t *testing.T, s *Store, rec *ImageRecord) string {
			checkMust(t, os.WriteFile(filepath.Join(s.local.root, "blobs", "sha256", "junk"), []byte("x"), 0o644))
			return filepath.Join("blobs", "sha256", "junk")
		}, ProblemStrayFile, true},
		{"index.json missing an entry", func(t *testing.T, s *Store, rec *ImageRecord) string {
			checkMust(t, os.WriteFile(filepath.Join(s.local.root, "index.json"), []byte(`{"schemaVersion":2,"manifests":[]}`), 0o644))
			return rec.Manifest.Digest.String() + " docker.io/library/a:1"
		}, ProblemIndex, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newLocalTestStore(t)
			id := importTestImage(t, s, "a:1", "one")
			rec, err := s.Lookup(context.Background(), id.String())
			checkMust(t, err)
			// Warm the metadata cache as a running daemon has it.
			_, err = s.local.metaFor(rec)
			checkMust(t, err)
			obj := tc.damage(t, s, rec)
			for _, full := range []bool{false, true} {
				rep, err := s.Check(context.Background(), full)
				checkMust(t, err)
				found := false
				for _, p := range rep.Problems {
					if p.Kind == tc.kind && p.Object == obj {
						found = true
						if p.Message == "" {
							t.Errorf("problem without a message: %+v", p)
						}
					}
				}
				if want := full || tc.cheapSees; found != want {
					t.Errorf("full=%v: found %s %s = %v, want %v; got %s", full, tc.kind, obj, found, want, strings.Join(checkKinds(rep), "; "))
				}
			}
		})
	}
}

func TestCheckHonoursCancel(t *testing.T) {
	s, _ := newLocalTestStore(t)
	importTestImage(t, s, "a:1", "one")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Check(ctx, true); err == nil {
		t.Fatal("cancelled check succeeded")
	}
}

func checkMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCheckConcurrentWithWrites: a check running while images are imported
// and removed reports no problem (it sees the store at one moment, and a
// blob removed while it is hashed is skipped).
func TestCheckConcurrentWithWrites(t *testing.T) {
	s, _ := newLocalTestStore(t)
	importTestImage(t, s, "base:1", "base")
	ctx := context.Background()
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(done)
		for i := 0; i < 30; i++ {
			name := fmt.Sprintf("churn:%d", i)
			rootfs := makeTestTar(t, testTarEntry{name: "f", body: name})
			if err := s.ImportImage(ctx, bytes.NewReader(rootfs), types.ImportOptions{Repo: name}, types.DiscardProgress); err != nil {
				errc <- err
				return
			}
			if _, err := s.ImageDelete(ctx, name, false, true); err != nil {
				errc <- err
				return
			}
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		for _, full := range []bool{false, true} {
			rep, err := s.Check(ctx, full)
			checkMust(t, err)
			if len(rep.Problems) != 0 {
				t.Fatalf("full=%v: problems during writes: %s", full, strings.Join(checkKinds(rep), "; "))
			}
		}
	}
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}
