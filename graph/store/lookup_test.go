package graph

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
)

func TestLookupNameForms(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	busy := importTestImage(t, s, "busybox", "busy")
	reg := importTestImage(t, s, "127.0.0.1:5000/team/app:1.4", "app")
	// Give reg a digest reference as a pull would.
	rec, _ := s.Lookup(ctx, reg.String())
	rec.RepoDigests = []string{"127.0.0.1:5000/team/app@" + rec.Manifest.Digest.String()}
	if err := s.PutImage(ctx, *rec); err != nil {
		t.Fatal(err)
	}
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
			got, err := s.Lookup(ctx, tt.name)
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
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	importTestImage(t, s, "busybox", "busy")
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
			_, err := s.Lookup(ctx, tt.name)
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
	s, _ := newLocalTestStore(t)
	// Import until two IDs share a first hex digit (at most 17 imports).
	seen := map[byte]digest.Digest{}
	var a, b digest.Digest
	for i := 0; a == ""; i++ {
		id := importTestImage(t, s, "", strings.Repeat("x", i+1))
		c := id.Encoded()[0]
		if prev, ok := seen[c]; ok {
			a, b = prev, id
		}
		seen[c] = id
	}
	ctx := context.Background()
	if _, err := s.Lookup(ctx, a.Encoded()[:1]); !errdefs.IsNotFound(err) {
		t.Fatalf("ambiguous prefix: err = %v, want not found", err)
	}
	n := 1
	for a.Encoded()[:n] == b.Encoded()[:n] {
		n++
	}
	got, err := s.Lookup(ctx, a.Encoded()[:n])
	if err != nil || got.ID != a {
		t.Fatalf("unique prefix: %v %v", got, err)
	}
}

func BenchmarkLookupShortID(b *testing.B) {
	s, _ := newLocalTestStore(b)
	// Fill the index directly: 5,000 records, no blobs needed for lookup.
	s.local.mu.Lock()
	var last digest.Digest
	for i := 0; i < 5000; i++ {
		id := digest.FromString(strings.Repeat("i", i+1))
		s.local.images[id] = &ImageRecord{ID: id, RepoTags: []string{}, RepoDigests: []string{}}
		last = id
	}
	s.local.reindex()
	s.local.mu.Unlock()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Lookup(context.Background(), last.Encoded()[:12]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTagWith5000Images(b *testing.B) {
	s, _ := newLocalTestStore(b)
	id := importTestImage(b, s, "bench:1", "bench")
	s.local.mu.Lock()
	for i := 0; i < 5000; i++ {
		d := digest.FromString(strings.Repeat("i", i+1))
		s.local.images[d] = &ImageRecord{ID: d, RepoTags: []string{"docker.io/library/img" + strings.Repeat("x", i%50) + ":latest"}, RepoDigests: []string{}}
	}
	s.local.reindex()
	s.local.mu.Unlock()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.TagImage(context.Background(), id.String(), "bench", "2"); err != nil {
			b.Fatal(err)
		}
	}
}
