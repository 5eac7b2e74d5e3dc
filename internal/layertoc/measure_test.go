package layertoc

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// realishTar is a layer shaped like a Python site-packages tree: n
// small files with long-ish names in a few hundred directories, whose
// content (hex) compresses about 2:1 as code does.
func realishTar(t testing.TB, n int) []byte {
	t.Helper()
	rnd := rand.New(rand.NewSource(2))
	var es []tarEntry
	for i := range n {
		dir := fmt.Sprintf("usr/lib/python3.11/site-packages/package_%03d/", i/20)
		if i%20 == 0 {
			es = append(es, tarEntry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755}})
		}
		es = append(es, tarEntry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("%smodule_%04d.py", dir, i), Mode: 0o644},
			body: []byte(hex.EncodeToString(randBytes(rnd, 200+i%2000)))})
	}
	return writeTar(t, es)
}

func randBytes(rnd *rand.Rand, n int) []byte {
	b := make([]byte, n)
	rnd.Read(b)
	return b
}

// TestEStargzTOCBytesPerEntry measures what the default tail buys: the
// TOC's compressed bytes per entry, and so the layers listed in one
// request. The figure is quoted by DefaultLimits' TailSize.
func TestEStargzTOCBytesPerEntry(t *testing.T) {
	// 300 files hold the one-request claim; LAYERTOC_MEASURE=1 measures
	// the per-entry figure on 1,500 (16 s under -race).
	files := 300
	if os.Getenv("LAYERTOC_MEASURE") == "1" {
		files = 1500
	}
	tarb := realishTar(t, files)
	blob, desc := buildEStargz(t, tarb)
	_, off := jtocOf(t, blob)
	rr := &blobReader{b: blob}
	toc, err := Read(context.Background(), rr, desc)
	if err != nil {
		t.Fatal(err)
	}
	tocN := int64(len(blob)) - estargzFooterSize - off
	per := float64(tocN) / float64(len(toc.Entries))
	t.Logf("eStargz: %d entries, TOC %d bytes gzip'ed (%.1f B/entry) = %.2f%% of the %d-byte tar; one request lists up to ~%d entries",
		len(toc.Entries), tocN, per, 100*float64(tocN)/float64(len(tarb)), len(tarb), int(float64(DefaultLimits().TailSize)/per))
	t.Logf("listing asked for %d of the layer's %d bytes", rr.bytes.Load(), len(blob))
	if n := rr.calls.Load(); n != 1 {
		t.Errorf("a %d-entry layer took %d requests with the default tail, want 1", len(toc.Entries), n)
	}
	zc, zdesc := buildZstdChunked(t, tarb)
	var zoff, zn, znu int64
	fmt.Sscanf(zdesc.Annotations[AnnotationZstdChunkedPosition], "%d:%d:%d:1", &zoff, &zn, &znu)
	zr := &blobReader{b: zc}
	if _, err := Read(context.Background(), zr, zdesc); err != nil || zr.calls.Load() != 1 {
		t.Fatalf("zstd:chunked: %v, %d requests", err, zr.calls.Load())
	}
	t.Logf("zstd:chunked: listing asked for %d of the layer's %d bytes in 1 request", zr.bytes.Load(), len(zc))
	t.Logf("zstd:chunked: TOC %d bytes compressed (%.1f B/entry), %d uncompressed; layer %d bytes", zn, float64(zn)/float64(len(toc.Entries)), znu, len(zc))
}

// millionTOC is a zstd:chunked TOC of n empty files: the hostile
// corpus's 10^6 tiny entries, as cheap to send as a TOC can make them.
func millionTOC(t testing.TB, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(`{"version":1,"entries":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"reg","name":"d/f`)
		b.WriteString(strconv.Itoa(i))
		b.WriteString(`"}`)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// TestMillionEntriesOverTheCapRefused: 10^6 entries against a lowered
// cap fail with ErrTooLarge as soon as the cap is passed.
func TestMillionEntriesOverTheCapRefused(t *testing.T) {
	blob, desc := craftZstdChunked(t, []byte("data"), millionTOC(t, 1_000_000))
	lim := DefaultLimits()
	lim.Entries = 10_000
	_, err := Read(context.Background(), &blobReader{b: blob}, desc, WithLimits(lim))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

// TestMillionEntriesMemory lists 10^6 entries under the default caps
// and reports the heap they take (LAYERTOC_MILLION=1: slow under -race).
func TestMillionEntriesMemory(t *testing.T) {
	if os.Getenv("LAYERTOC_MILLION") == "" {
		t.Skip("LAYERTOC_MILLION=1 to measure")
	}
	const n = 1_000_000
	blob, desc := craftZstdChunked(t, []byte("data"), millionTOC(t, n))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	toc, err := Read(context.Background(), &blobReader{b: blob}, desc)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	runtime.GC()
	var kept runtime.MemStats
	runtime.ReadMemStats(&kept)
	t.Logf("%d entries from a %d-byte TOC frame in %v: allocated %d MiB, %d MiB live after (%.0f B/entry)",
		len(toc.Entries), len(blob), took, (after.TotalAlloc-before.TotalAlloc)>>20, (kept.HeapAlloc-before.HeapAlloc)>>20,
		float64(kept.HeapAlloc-before.HeapAlloc)/n)
	runtime.KeepAlive(toc)
}
