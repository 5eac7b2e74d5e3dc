package contents

import (
	"testing"

	"github.com/wharfproject/wharf/internal/gzindex"
)

// A gzip layer's span is the default up to 2 GiB, then wide enough for
// about 1,024 checkpoints: an incompressible layer's windows stay within
// the cap.
func TestGzipSpan(t *testing.T) {
	for _, tc := range []struct{ size, want int64 }{
		{0, gzindex.DefaultSpan},
		{200 << 20, gzindex.DefaultSpan},
		{2 << 30, gzindex.DefaultSpan},
		{8 << 30, 8 << 20},
		{100 << 30, 100 << 20},
	} {
		if got := gzipSpan(tc.size); got != tc.want {
			t.Errorf("gzipSpan(%d) = %d, want %d", tc.size, got, tc.want)
		}
		if n := max(tc.size, 1) / gzipSpan(tc.size); n > 1024 {
			t.Errorf("%d bytes: %d checkpoints of incompressible data", tc.size, n)
		}
		if windows := (max(tc.size, 1) / gzipSpan(tc.size)) * 32 << 10; windows > gzindex.MaxWindowBytes {
			t.Errorf("%d bytes: %d bytes of windows", tc.size, windows)
		}
	}
}
