package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// RateLimitSample is a registry host's remaining requests, as its
// RateLimit-Remaining header said last.
type RateLimitSample struct {
	Host      string
	Remaining int64
}

// RateLimits lists the samples (at scrape time).
type RateLimits func() []RateLimitSample

// WatchRateLimits adds wharf_registry_ratelimit_remaining{host}, read
// through rl at each scrape: the registry client keeps the state (bounded,
// registry/transport/ratelimit.go), so nothing is updated per request here.
func (m *Metrics) WatchRateLimits(rl RateLimits) {
	m.reg.MustRegister(&rateLimitCollector{m: m, rl: rl, desc: prometheus.NewDesc(
		"wharf_registry_ratelimit_remaining",
		"Requests a registry said remain in its rate-limit window (its RateLimit-Remaining header, last seen), by host:port; hosts beyond the label cap share \"other\" with the lowest value among them.",
		[]string{"host"}, nil)})
}

type rateLimitCollector struct {
	m    *Metrics
	rl   RateLimits
	desc *prometheus.Desc
}

func (c *rateLimitCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect bounds the host label as the request metrics do (labelCap: the
// first 100 hosts, the rest "other"); two hosts under one label would be
// one series twice, so "other" shows the lowest remaining, the one a
// reader needs to see.
func (c *rateLimitCollector) Collect(ch chan<- prometheus.Metric) {
	by := map[string]int64{}
	for _, s := range c.rl() {
		h := c.m.hosts.label(s.Host)
		if v, ok := by[h]; !ok || s.Remaining < v {
			by[h] = s.Remaining
		}
	}
	for h, v := range by {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(v), h)
	}
}
