package contents

import (
	"context"
	"testing"
)

// The diff's reads: the layers from n up are built (and only those), the
// ones below are handed over only when each is already held, from memory
// or from disk, never read for it.
func TestLayerIndexesBuildOnlyFromTheirStartAndCachedOnesReadNothing(t *testing.T) {
	dir := t.TempDir()
	r := newRoom(t, dir, 0)
	blobs := newMemBlobs(false)
	b0, d0 := gzipOf(t, tarOf(t, tdir("etc"), tfile("etc/a", "a")))
	b1, d1 := gzipOf(t, tarOf(t, tfile("etc/b", "b")))
	img := imageOf(blobs, lb(b0, d0), lb(b1, d1))
	ctx := context.Background()

	if _, ok := r.CachedLayerIndexes(img, 1); ok {
		t.Fatal("a layer never indexed was handed over as cached")
	}
	ixs, err := r.LayerIndexes(ctx, img, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ixs) != 1 || ixs[0].Layer != d1.Digest || blobs.opens.Load() != 1 {
		t.Fatalf("%d indexes, %d blob reads: want layer 1's alone, one read", len(ixs), blobs.opens.Load())
	}
	if _, ok := r.CachedLayerIndexes(img, 1); ok {
		t.Fatal("layer 0 handed over as cached before it was indexed")
	}
	if _, err := r.LayerIndexes(ctx, img, 0); err != nil {
		t.Fatal(err)
	}
	// A new room over the same directory: the indexes come from disk.
	r2 := newRoom(t, dir, 0)
	opens := blobs.opens.Load()
	cached, ok := r2.CachedLayerIndexes(img, 2)
	if !ok || len(cached) != 2 || cached[0].Layer != d0.Digest || blobs.opens.Load() != opens {
		t.Fatalf("cached %v (%d), %d more reads: want both from disk and none", ok, len(cached), blobs.opens.Load()-opens)
	}
	if _, err := r.LayerIndexes(ctx, img, 3); err == nil {
		t.Fatal("layers from past the top answered")
	}
}

// Two images' layers from one place up are built at once, and a failure
// of either is the answer.
func TestLayerIndexesOfTwo(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	b0, d0 := gzipOf(t, tarOf(t, tdir("etc"), tfile("etc/a", "a")))
	b1, d1 := gzipOf(t, tarOf(t, tfile("etc/b", "b")))
	b2, d2 := gzipOf(t, tarOf(t, tfile("etc/c", "c")))
	a := imageOf(blobs, lb(b0, d0), lb(b1, d1))
	b := imageOf(blobs, lb(b0, d0), lb(b2, d2))
	ai, bi, err := r.LayerIndexesOfTwo(context.Background(), a, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ai) != 1 || len(bi) != 1 || ai[0].Layer != d1.Digest || bi[0].Layer != d2.Digest || blobs.opens.Load() != 2 {
		t.Fatalf("got %d and %d indexes, %d reads", len(ai), len(bi), blobs.opens.Load())
	}
	broken := imageOf(newMemBlobs(false), lb(b0, d0))
	_, d3 := gzipOf(t, tarOf(t, tfile("etc/d", "d")))
	broken.Layers = append(broken.Layers, d3) // a blob its Blobs lack, never indexed
	if _, _, err := r.LayerIndexesOfTwo(context.Background(), a, broken, 1); err == nil {
		t.Fatal("a layer that cannot be read answered")
	}
}
