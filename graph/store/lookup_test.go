package store

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
)

func TestLookupNameForms(t *testing.T) {
	s := newTestStore(t)
	busy := putTagged(t, s, "busybox", "busy").ID
	// reg has a digest reference as a pull gives it.
	rec := putTestImage(t, s, testImage{tags: []string{"127.0.0.1:5000/team/app:1.4"}, digests: []string{"127.0.0.1:5000/team/app"}, layers: []string{"app"}})
	reg := rec.ID
	tests := []struct {
		name string
		want digest.Digest
	}{
		{"busybox", busy},
		{"busybox:latest", busy},
		{"library/busybox", busy},
		{"docker.io/library/busybox:latest", busy},
		{busy.String(), busy},
		{busy.Encoded(), busy},
		{busy.Encoded()[:12], busy},
		{"sha256:" + busy.Encoded()[:12], busy},
		{"127.0.0.1:5000/team/app:1.4", reg},
		{"127.0.0.1:5000/team/app@" + rec.Manifest.Digest.String(), reg},
		{"127.0.0.1:5000/team/app:1.4@" + rec.Manifest.Digest.String(), reg},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Lookup(tt.name)
			if err != nil {
				t.Fatalf("Lookup(%q): %v", tt.name, err)
			}
			if got.ID != tt.want {
				t.Fatalf("Lookup(%q) = %s, want %s", tt.name, got.ID, tt.want)
			}
		})
	}
}

func TestLookupMissingAndMalformed(t *testing.T) {
	s := newTestStore(t)
	putTagged(t, s, "busybox", "busy")
	zero := "sha256:" + strings.Repeat("0", 64)
	tests := []struct {
		name    string
		class   error
		message string
	}{
		{"nosuchimage", errdefs.ErrNotFound, "No such image: nosuchimage:latest"},
		{"nosuchimage:latest", errdefs.ErrNotFound, "No such image: nosuchimage:latest"},
		{"busybox:1.0", errdefs.ErrNotFound, "No such image: busybox:1.0"},
		{zero, errdefs.ErrNotFound, "No such image: " + zero},
		{"busybox@" + digest.FromString("x").String(), errdefs.ErrNotFound, "No such image: busybox@" + digest.FromString("x").String()},
		{"UPPER:case", errdefs.ErrInvalidArgument, "invalid reference format: repository name (library/UPPER) must be lowercase"},
		{"bad name!", errdefs.ErrInvalidArgument, "invalid reference format"},
		{"", errdefs.ErrNotFound, "No such image: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Lookup(tt.name)
			if !errors.Is(err, tt.class) {
				t.Fatalf("Lookup(%q) err = %v, want class %v", tt.name, err, tt.class)
			}
			if !strings.HasPrefix(err.Error(), tt.message) {
				t.Fatalf("Lookup(%q) message = %q, want prefix %q", tt.name, err.Error(), tt.message)
			}
		})
	}
}

func TestLookupAmbiguousShortID(t *testing.T) {
	s := newTestStore(t)
	// Store images until two IDs share a first hex digit (at most 17).
	seen := map[byte]digest.Digest{}
	var a, b digest.Digest
	for i := 0; a == ""; i++ {
		id := putTagged(t, s, "", strings.Repeat("x", i+1)).ID
		c := id.Encoded()[0]
		if prev, ok := seen[c]; ok {
			a, b = prev, id
		}
		seen[c] = id
	}
	if _, err := s.Lookup(a.Encoded()[:1]); !errdefs.IsNotFound(err) {
		t.Fatalf("ambiguous prefix: err = %v, want not found", err)
	}
	n := 1
	for a.Encoded()[:n] == b.Encoded()[:n] {
		n++
	}
	got, err := s.Lookup(a.Encoded()[:n])
	if err != nil || got.ID != a {
		t.Fatalf("unique prefix: %v %v", got, err)
	}
}

// fillRecords adds n index-only records (no blobs: lookup needs none) to
// the store's records, in one change.
func fillRecords(s *Store, n int, tag func(i int) string) digest.Digest {
	var last digest.Digest
	_, err := s.Update(false, func(tx *Txn) error {
		for i := 0; i < n; i++ {
			id := digest.FromString(strings.Repeat("i", i+1))
			var tags []string
			if tag != nil {
				tags = []string{tag(i)}
			}
			tx.put(ImageRecord{ID: id}, tags, nil, nil)
			last = id
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	return last
}

func BenchmarkLookupShortID(b *testing.B) {
	s := newTestStore(b)
	last := fillRecords(s, 5000, nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Lookup(last.Encoded()[:12]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTagWith5000Images is the cost of one tag (graph's TagImage: an
// Update that points a reference) with 5,000 images: one bbolt
// transaction, whatever the store's size (BenchmarkTagWith50000Images).
func BenchmarkTagWith5000Images(b *testing.B) { benchmarkTag(b, 5000) }

func BenchmarkTagWith50000Images(b *testing.B) { benchmarkTag(b, 50000) }

func benchmarkTag(b *testing.B, n int) {
	s := newTestStore(b)
	id := putTagged(b, s, "bench:1", "bench").ID
	fillRecords(s, n, func(i int) string { return "docker.io/library/img" + strings.Repeat("x", i%50) + ":latest" })
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, err := s.Update(false, func(tx *Txn) error {
			tx.Image(id).LastTagTime = time.Now().UTC()
			return tx.PointRef("docker.io/library/bench:2", id)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTag64Concurrent is 64 tags of distinct images at once (the
// group commit), at 5,000 images; one op is the 64. Beside
// BenchmarkTagWith5000Images (one tag), it is what the store adds to
// bench case 11's concurrent row without HTTP.
func BenchmarkTag64Concurrent(b *testing.B) {
	s := newTestStore(b)
	ids := make([]digest.Digest, 64)
	for k := range ids {
		ids[k] = putTagged(b, s, fmt.Sprintf("bench%d:1", k), fmt.Sprint("bench", k)).ID
	}
	fillRecords(s, 5000, func(i int) string { return "docker.io/library/img" + strings.Repeat("x", i%50) + ":latest" })
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		for k := range ids {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				_, err := s.Update(false, func(tx *Txn) error {
					tx.Image(ids[k]).LastTagTime = time.Now().UTC()
					return tx.PointRef(fmt.Sprintf("docker.io/library/bench%d:t%d", k, i%8), ids[k]) // at most 9 tags each
				})
				if err != nil {
					b.Error(err)
				}
			}(k)
		}
		wg.Wait()
	}
}
