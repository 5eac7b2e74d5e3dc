package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func checkKinds(rep *CheckReport) []string {
	var out []string
	for _, p := range rep.Problems {
		out = append(out, p.Kind+" "+p.Object)
	}
	return out
}

func TestCheckHealthyStoreHasNoProblems(t *testing.T) {
	s := newTestStore(t)
	putTagged(t, s, "a:1", "one")
	putTagged(t, s, "b:1", "two")
	for _, full := range []bool{false, true} {
		rep, err := s.Check(context.Background(), full)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) != 0 || rep.Images != 2 || rep.Blobs != 6 || rep.UnreferencedBlobs != 0 || rep.UnreferencedBytes != 0 {
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
			m, _ := s.Meta(rec)
			d := m.Manifest.Layers[0].Digest
			checkMust(t, os.Remove(s.blobPath(d)))
			return d.String()
		}, ProblemMissingBlob, true},
		{"truncated layer", func(t *testing.T, s *Store, rec *ImageRecord) string {
			m, _ := s.Meta(rec)
			d := m.Manifest.Layers[0].Digest
			checkMust(t, os.Truncate(s.blobPath(d), 3))
			return d.String()
		}, ProblemSizeMismatch, true},
		{"flipped byte in config", func(t *testing.T, s *Store, rec *ImageRecord) string {
			p := s.blobPath(rec.ID)
			b, err := os.ReadFile(p)
			checkMust(t, err)
			b[len(b)/2] ^= 1
			checkMust(t, os.WriteFile(p, b, 0o644))
			return rec.ID.String()
		}, ProblemDigestMismatch, false},
		{"missing config", func(t *testing.T, s *Store, rec *ImageRecord) string {
			checkMust(t, os.Remove(s.blobPath(rec.ID)))
			return rec.ID.String()
		}, ProblemMissingBlob, true},
		{"stray file", func(t *testing.T, s *Store, rec *ImageRecord) string {
			checkMust(t, os.WriteFile(filepath.Join(s.root, "blobs", "sha256", "junk"), []byte("x"), 0o644))
			return filepath.Join("blobs", "sha256", "junk")
		}, ProblemStrayFile, true},
		{"index.json missing an entry", func(t *testing.T, s *Store, rec *ImageRecord) string {
			checkMust(t, os.WriteFile(filepath.Join(s.root, "index.json"), []byte(`{"schemaVersion":2,"manifests":[]}`), 0o644))
			return rec.Manifest.Digest.String() + " docker.io/library/a:1"
		}, ProblemIndex, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t)
			rec := putTagged(t, s, "a:1", "one")
			// index.json caught up with the records, as it is IndexDelay
			// after a change: then damage to it is damage.
			checkMust(t, s.FlushIndex())
			// Warm the metadata cache as a running daemon has it.
			_, err := s.Meta(rec)
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
	s := newTestStore(t)
	putTagged(t, s, "a:1", "one")
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
	s := newTestStore(t)
	putTagged(t, s, "base:1", "base")
	ctx := context.Background()
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(done)
		for i := 0; i < 30; i++ {
			name := fmt.Sprintf("churn:%d", i)
			// As an import does it: a lease, the blobs, Put, Release.
			lease := s.NewLease()
			rec, err := writeImage(lease, testImage{tags: []string{name}, layers: []string{name, "base"}})
			if err == nil {
				err = s.Put(lease, rec)
			}
			lease.Release()
			if err == nil {
				_, err = s.Update(true, func(tx *Txn) error { tx.Delete(rec.ID); return nil })
			}
			if err != nil {
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

// TestCheckReportsUnreferencedBlobs: a blob no record uses is reported as
// unreferenced-blob and counted (UnreferencedBlobs, UnreferencedBytes) by
// both checks, unless a live lease pins it (an operation in progress);
// once the lease is gone, or CollectAll ran, the store is clean.
func TestCheckReportsUnreferencedBlobs(t *testing.T) {
	type orphan struct {
		name   string
		body   string
		leased bool
	}
	tests := []struct {
		name    string
		orphans []orphan
	}{
		{"none", nil},
		{"one", []orphan{{"o1", "orphan one", false}}},
		{"two", []orphan{{"o1", "orphan one", false}, {"o2", "the second orphan", false}}},
		{"leased only", []orphan{{"l1", "being pulled", true}}},
		{"leased and not", []orphan{{"o1", "orphan one", false}, {"l1", "being pulled", true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			putTagged(t, s, "a:1", "a")
			lease := s.NewLease()
			defer lease.Release()
			var wantN int
			var wantBytes int64
			want := map[string]bool{}
			for _, o := range tt.orphans {
				d := digest.FromString(o.body)
				if o.leased {
					_, err := lease.WriteBlob(context.Background(), ocispec.Descriptor{Digest: d, Size: int64(len(o.body))}, strings.NewReader(o.body))
					checkMust(t, err)
					continue
				}
				// As a crash leaves it: a blob file nothing pins.
				writeFile(t, s.root, filepath.Join(BlobsDir, "sha256", d.Encoded()), o.body, 0o600)
				wantN++
				wantBytes += int64(len(o.body))
				want[d.String()] = true
			}
			for _, full := range []bool{false, true} {
				rep, err := s.Check(context.Background(), full)
				checkMust(t, err)
				got := map[string]bool{}
				for _, p := range rep.Problems {
					if p.Kind != ProblemUnreferenced || p.Image != "" || p.Message == "" {
						t.Fatalf("full=%v: unexpected problem %+v", full, p)
					}
					got[p.Object] = true
				}
				if rep.UnreferencedBlobs != wantN || rep.UnreferencedBytes != wantBytes || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("full=%v: %d blobs, %d bytes, %v; want %d, %d, %v", full, rep.UnreferencedBlobs, rep.UnreferencedBytes, got, wantN, wantBytes, want)
				}
				if rep.Images != 1 || rep.Blobs != 3+len(tt.orphans) {
					t.Fatalf("full=%v: images %d blobs %d", full, rep.Images, rep.Blobs)
				}
			}
			o, err := s.Orphans(context.Background())
			checkMust(t, err)
			if len(o) != wantN {
				t.Fatalf("Orphans = %v", o)
			}
			n, freed, err := s.CollectAll(context.Background())
			checkMust(t, err)
			if n != wantN || freed != wantBytes {
				t.Fatalf("CollectAll = %d, %d; want %d, %d", n, freed, wantN, wantBytes)
			}
			lease.Release()
			rep := checkClean(t, s)
			if rep.UnreferencedBlobs != 0 || rep.UnreferencedBytes != 0 || rep.Blobs != 3 {
				t.Fatalf("after collection: %+v", rep)
			}
		})
	}
}

// TestCheckNoPruneDeleteLeavesUnreferencedBlobs: a delete with prune=false
// (noprune=1) keeps the image's blobs, which the check then counts as
// unreferenced until a prune (CollectAll) reclaims them.
func TestCheckNoPruneDeleteLeavesUnreferencedBlobs(t *testing.T) {
	s := newTestStore(t)
	rec := putTagged(t, s, "a:1", "a")
	var size int64
	seen := map[digest.Digest]bool{}
	for _, d := range s.blobsOf(rec) {
		if !seen[d] {
			seen[d] = true
			size += s.BlobSize(d)
		}
	}
	if freed := deleteImage(t, s, "a:1", false); freed != 0 {
		t.Fatalf("noprune delete freed %d bytes", freed)
	}
	rep, err := s.Check(context.Background(), false)
	checkMust(t, err)
	if rep.UnreferencedBlobs != 3 || rep.UnreferencedBytes != size || len(rep.Problems) != 3 {
		t.Fatalf("report = %+v", rep)
	}
	if n, freed, err := s.CollectAll(context.Background()); err != nil || n != 3 || freed != size {
		t.Fatalf("CollectAll = %d %d %v", n, freed, err)
	}
	checkClean(t, s)
}
