package decompress

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"testing"

	"github.com/containerd/errdefs"
)

func gzipOf(t *testing.T, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestStreamCapsABomb: zeros past slack + ratio × compressed are refused
// (InvalidArgument); the same stream under the slack passes.
func TestStreamCapsABomb(t *testing.T) {
	bomb := gzipOf(t, 4<<20) // a few KiB → 4 MiB
	r, err := Stream(bufio.NewReader(bytes.NewReader(bomb)), Limit{Slack: 1 << 20, Ratio: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, r); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("err = %v, want InvalidArgument", err)
	}
	r, err = Stream(bufio.NewReader(bytes.NewReader(bomb)), Limit{Slack: 8 << 20, Ratio: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, r); err != nil || n != 4<<20 {
		t.Fatalf("n = %d, err = %v", n, err)
	}
}

// TestBudgetIsShared: two streams share one budget.
func TestBudgetIsShared(t *testing.T) {
	body := NewCounter(bytes.NewReader(make([]byte, 10)))
	if _, err := io.Copy(io.Discard, body); err != nil {
		t.Fatal(err)
	}
	b := NewBudget(body, Limit{Slack: 100, Ratio: 1}) // 110 bytes in all
	if _, err := io.Copy(io.Discard, b.Guard(bytes.NewReader(make([]byte, 60)))); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, b.Guard(bytes.NewReader(make([]byte, 60)))); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("second stream: err = %v, want InvalidArgument", err)
	}
}

func TestMaxIsWhatGuardLetsThrough(t *testing.T) {
	l := Limit{Slack: 100, Ratio: 4}
	for _, tc := range []struct{ in, want int64 }{
		{0, 100}, {-5, 100}, {10, 140},
		{math.MaxInt64 / 2, math.MaxInt64}, // saturates, never wraps
	} {
		if got := l.Max(tc.in); got != tc.want {
			t.Errorf("Max(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
	if got, want := (Limit{}).Max(1), int64(defaultSlack+defaultRatio); got != want {
		t.Errorf("default Max(1) = %d, want %d", got, want)
	}
}
