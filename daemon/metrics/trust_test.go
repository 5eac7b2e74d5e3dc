package metrics

import "testing"

// The trust counters are read at scrape time; the decision label has its
// three values, each listed from the start.
func TestTrustCounters(t *testing.T) {
	m := New()
	s := TrustSample{Verifications: 6, Accepted: 3, Rejected: 2, NoPolicy: 1}
	m.WatchTrust(func() TrustSample { return s })
	fams := scrape(t, m, &quietLog{})
	if got := value(t, fams, "wharf_trust_verifications_total", nil); got != 6 {
		t.Errorf("verifications: %v, want 6", got)
	}
	for d, want := range map[string]float64{"accepted": 3, "rejected": 2, "no-policy": 1} {
		if got := value(t, fams, "wharf_trust_verdicts_total", map[string]string{"decision": d}); got != want {
			t.Errorf("%s: %v, want %v", d, got, want)
		}
	}
	if n := len(fams["wharf_trust_verdicts_total"].Metric); n != 3 {
		t.Errorf("%d series, want 3", n)
	}
	s.Verifications = 7
	if got := value(t, scrape(t, m, &quietLog{}), "wharf_trust_verifications_total", nil); got != 7 {
		t.Errorf("after one more: %v, want 7", got)
	}
}
