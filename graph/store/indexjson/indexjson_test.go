package indexjson

import (
	"testing"
	"time"
)

// TestIndexDelayGrowsWithTheWriteCost: the background writer waits at
// least ten times its last write's duration (capped), so a large store's
// rewrites take a tenth of a CPU at most; a small store keeps IndexDelay.
func TestIndexDelayGrowsWithTheWriteCost(t *testing.T) {
	s := &Scheduler{delay: IndexDelay}
	for _, tc := range []struct {
		cost, want time.Duration
	}{
		{0, IndexDelay},
		{5 * time.Millisecond, IndexDelay},
		{500 * time.Millisecond, 5 * time.Second},
		{time.Minute, maxIndexDelay},
	} {
		s.cost.Store(int64(tc.cost))
		if got := s.Delay(); got != tc.want {
			t.Errorf("last write %v: delay %v, want %v", tc.cost, got, tc.want)
		}
	}
}
