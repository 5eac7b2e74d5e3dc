package metrics

import (
	"fmt"
	"testing"
)

// TestCheckRemoteFamilies: the watch's gauges carry the sample read at
// scrape time; the registry label is capped as host is, "other" summing
// the counts and keeping the newest success.
func TestCheckRemoteFamilies(t *testing.T) {
	m := New()
	var regs []CheckRemoteRegistry
	for i := range maxHostLabels + 2 {
		regs = append(regs, CheckRemoteRegistry{Registry: fmt.Sprintf("r%d:5000", i), Outdated: 1, Newer: 2, LastSuccess: float64(1000 + i)})
	}
	m.WatchCheckRemote(func() CheckRemoteSample {
		return CheckRemoteSample{Registries: regs, BaseOutdated: 3, Rounds: 7, Interval: 60}
	})
	fams := scrape(t, m, &quietLog{})
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"wharf_images_outdated", map[string]string{"registry": "r0:5000"}, 1},
		{"wharf_images_newer_version", map[string]string{"registry": "r0:5000"}, 2},
		{"wharf_check_remote_last_success_timestamp_seconds", map[string]string{"registry": "r0:5000"}, 1000},
		{"wharf_images_outdated", map[string]string{"registry": otherHost}, 2},
		{"wharf_check_remote_last_success_timestamp_seconds", map[string]string{"registry": otherHost}, float64(1000 + maxHostLabels + 1)},
		{"wharf_images_base_outdated", nil, 3},
		{"wharf_check_remote_rounds_total", nil, 7},
		{"wharf_check_remote_interval_seconds", nil, 60},
	} {
		if got := value(t, fams, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	if n := len(fams["wharf_images_outdated"].Metric); n != maxHostLabels+1 {
		t.Errorf("%d registry series, want %d", n, maxHostLabels+1)
	}
}
