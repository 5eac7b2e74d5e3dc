package metrics

import (
	"fmt"
	"testing"
)

// The gauge's host label is bounded as the request metrics' is: beyond
// maxHostLabels hosts, "other" carries the lowest remaining among them.
func TestRateLimitGaugeBoundsHosts(t *testing.T) {
	m := New()
	var samples []RateLimitSample
	for i := 0; i < maxHostLabels+3; i++ {
		samples = append(samples, RateLimitSample{Host: fmt.Sprintf("h%d:5000", i), Remaining: int64(1000 - i)})
	}
	m.WatchRateLimits(func() []RateLimitSample { return samples })
	fams := scrape(t, m, &quietLog{})
	const name = "wharf_registry_ratelimit_remaining"
	if got := value(t, fams, name, map[string]string{"host": "h0:5000"}); got != 1000 {
		t.Errorf("h0: %v, want 1000", got)
	}
	if got := value(t, fams, name, map[string]string{"host": otherHost}); got != float64(1000-maxHostLabels-2) {
		t.Errorf("other: %v, want the lowest, %d", got, 1000-maxHostLabels-2)
	}
	if n := len(fams[name].Metric); n != maxHostLabels+1 {
		t.Errorf("%d series, want %d", n, maxHostLabels+1)
	}
}
