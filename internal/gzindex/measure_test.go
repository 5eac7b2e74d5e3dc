package gzindex

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math/rand"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestMeasureLayer reports an index's figures for a real gzip layer:
// GZINDEX_LAYER=/path/layer.tar.gz go test -run MeasureLayer -v.
func TestMeasureLayer(t *testing.T) {
	path := os.Getenv("GZINDEX_LAYER")
	if path == "" {
		t.Skip("GZINDEX_LAYER names no layer")
	}
	z, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	plainN, err := io.Copy(io.Discard, zr)
	if err != nil {
		t.Fatal(err)
	}
	plain := time.Since(start)

	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start = time.Now()
	ix, err := Build(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	runtime.ReadMemStats(&m1)
	enc, _ := ix.MarshalBinary()
	var windows int64
	for _, c := range ix.Checkpoints {
		windows += int64(len(c.Window))
	}
	t.Logf("layer: %d bytes gzip, %d uncompressed", len(z), plainN)
	t.Logf("index: %d checkpoints, %d bytes encoded = %.3f %% of uncompressed (%.3f %% of compressed); windows %d bytes",
		len(ix.Checkpoints), len(enc), 100*float64(len(enc))/float64(plainN), 100*float64(len(enc))/float64(len(z)), windows)
	t.Logf("build: %v (compress/gzip alone %v, %.2f×), %d MiB allocated", took, plain, float64(took)/float64(plain), (m1.TotalAlloc-m0.TotalAlloc)>>20)

	rnd := rand.New(rand.NewSource(1))
	var asked, reads int64
	start = time.Now()
	for i := 0; i < 50; i++ {
		off := rnd.Int63n(ix.UncompressedSize - 10<<10)
		rr := &ranges{b: z}
		r, err := ix.ReadAt(context.Background(), rr, off, 10<<10)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			t.Fatal(err)
		}
		asked += rr.asked
		reads++
	}
	t.Logf("a 10 KiB read: one range of %d KiB on average, %v each", asked/reads>>10, time.Since(start)/time.Duration(reads))
}
