package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// TrustSample is the signature verdicts computed since start-up: all of
// them, and by decision.
type TrustSample struct {
	Verifications                int64
	Accepted, Rejected, NoPolicy int64
}

// TrustCounts reads the sample (at scrape time).
type TrustCounts func() TrustSample

// Decision label values: a fixed set, the three decisions a verdict has
// (trust.Decision), never a value a registry or a policy file chooses.
var trustDecisions = []string{"accepted", "rejected", "no-policy"}

// WatchTrust adds wharf_trust_verifications_total and
// wharf_trust_verdicts_total{decision}, read through tc at each scrape:
// graph/distribution keeps the counters (atomic adds beside its verdict
// cache), so nothing is updated per verification here.
func (m *Metrics) WatchTrust(tc TrustCounts) {
	m.reg.MustRegister(&trustCollector{tc: tc,
		verifications: prometheus.NewDesc("wharf_trust_verifications_total",
			"Signature verdicts computed (signatures read and evaluated), not served from the verdict cache; concurrent asks for one digest share one.", nil, nil),
		verdicts: prometheus.NewDesc("wharf_trust_verdicts_total",
			"Signature verdicts computed (as wharf_trust_verifications_total), by decision: accepted, rejected, no-policy (verify=1 without a policy).", []string{"decision"}, nil),
	})
}

type trustCollector struct {
	tc                      TrustCounts
	verifications, verdicts *prometheus.Desc
}

func (c *trustCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.verifications
	ch <- c.verdicts
}

func (c *trustCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.tc()
	ch <- prometheus.MustNewConstMetric(c.verifications, prometheus.CounterValue, float64(s.Verifications))
	for i, v := range []int64{s.Accepted, s.Rejected, s.NoPolicy} {
		ch <- prometheus.MustNewConstMetric(c.verdicts, prometheus.CounterValue, float64(v), trustDecisions[i])
	}
}
