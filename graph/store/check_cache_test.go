package graph

import (
	"context"
	"fmt"
	"testing"

	"github.com/wharfproject/wharf/api/types"
)

// TestMetadataCacheShrinksWithTheStore: importing and removing images in a
// loop must not grow the manifest/config cache without bound.
func TestMetadataCacheShrinksWithTheStore(t *testing.T) {
	s, _ := newLocalTestStore(t)
	keep := importTestImage(t, s, "keep:1", "keep")
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("churn:%d", i)
		importTestImage(t, s, name, name)
		if _, err := s.ImageDelete(context.Background(), name, false, true); err != nil {
			t.Fatal(err)
		}
	}
	s.local.metaMu.Lock()
	n := len(s.local.meta)
	s.local.metaMu.Unlock()
	if n != 1 {
		t.Fatalf("metadata cache holds %d entries for 1 image", n)
	}
	if _, err := s.ImageInspect(context.Background(), keep.String(), types.InspectOptions{}); err != nil {
		t.Fatal(err)
	}
}
