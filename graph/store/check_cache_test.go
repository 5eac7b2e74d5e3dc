package store

import (
	"context"
	"fmt"
	"testing"
)

// TestMetadataCacheShrinksWithTheStore: storing and removing images in a
// loop must not grow the manifest/config cache without bound, whichever
// way their blobs go: collected by the delete, or left by a noprune delete
// and reclaimed by a prune (CollectAll).
func TestMetadataCacheShrinksWithTheStore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		prune bool
	}{
		{"delete collects", true},
		{"noprune delete, then prune", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t)
			keep := putTagged(t, s, "keep:1", "keep")
			for i := 0; i < 20; i++ {
				name := fmt.Sprintf("churn:%d", i)
				putTagged(t, s, name, name)
				deleteImage(t, s, name, tc.prune)
				if !tc.prune {
					if _, _, err := s.CollectAll(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
			if n := len(blobSet(t, s)); n != 3 {
				t.Fatalf("%d blobs for 1 image", n)
			}
			s.metaMu.Lock()
			n := s.meta.Len()
			s.metaMu.Unlock()
			if n != 1 {
				t.Fatalf("metadata cache holds %d entries for 1 image", n)
			}
			if _, err := s.Meta(keep); err != nil {
				t.Fatal(err)
			}
		})
	}
}
