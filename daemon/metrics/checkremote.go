package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// CheckRemoteRegistry is one registry's share of the daemon's watch
// (check-remote-interval, daemon/watch.go).
type CheckRemoteRegistry struct {
	Registry string
	// Outdated and Newer count the local tags of the registry whose tag
	// names another digest now, and that have a newer version.
	Outdated, Newer int
	// LastSuccess is when a round last had an answer from the registry
	// (Unix seconds; 0: never).
	LastSuccess float64
}

// CheckRemoteSample is the watch's state.
type CheckRemoteSample struct {
	Registries   []CheckRemoteRegistry
	BaseOutdated int
	// Rounds are the rounds finished since start-up; Interval the
	// interval now (seconds, 0: off).
	Rounds   int64
	Interval float64
}

// CheckRemoteState reads the sample (at scrape time).
type CheckRemoteState func() CheckRemoteSample

// WatchCheckRemote adds the families of the watch, read through st at each
// scrape: the watch keeps its state (one entry per local tag), so nothing
// is updated per round here.
//
//	wharf_images_outdated{registry}                              gauge
//	wharf_images_newer_version{registry}                         gauge
//	wharf_images_base_outdated                                   gauge
//	wharf_check_remote_last_success_timestamp_seconds{registry}  gauge
//	wharf_check_remote_rounds_total                              counter
//	wharf_check_remote_interval_seconds                          gauge
//
// The registry label is capped as the host label is (the first 100, the
// rest "other", summed; the newest timestamp among them).
func (m *Metrics) WatchCheckRemote(st CheckRemoteState) {
	m.reg.MustRegister(&checkRemoteCollector{m: m, st: st,
		outdated: prometheus.NewDesc("wharf_images_outdated",
			"Local tags whose tag names another digest in its registry now, as the daemon's watch (check-remote-interval) last saw, by registry.", []string{"registry"}, nil),
		newer: prometheus.NewDesc("wharf_images_newer_version",
			"Local version tags with a higher version of the same shape in their repository, as the watch last saw, by registry.", []string{"registry"}, nil),
		baseOutdated: prometheus.NewDesc("wharf_images_base_outdated",
			"Local images whose base (org.opencontainers.image.base.name/.digest) has moved for their platform, as the watch last saw.", nil, nil),
		lastSuccess: prometheus.NewDesc("wharf_check_remote_last_success_timestamp_seconds",
			"When a round of the watch last had an answer from the registry (Unix time), by registry.", []string{"registry"}, nil),
		rounds: prometheus.NewDesc("wharf_check_remote_rounds_total",
			"Rounds of the watch finished since start-up.", nil, nil),
		interval: prometheus.NewDesc("wharf_check_remote_interval_seconds",
			"The watch's interval now (check-remote-interval; 0: off).", nil, nil),
	})
}

type checkRemoteCollector struct {
	m                             *Metrics
	st                            CheckRemoteState
	outdated, newer, baseOutdated *prometheus.Desc
	lastSuccess, rounds, interval *prometheus.Desc
}

func (c *checkRemoteCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.outdated, c.newer, c.baseOutdated, c.lastSuccess, c.rounds, c.interval} {
		ch <- d
	}
}

func (c *checkRemoteCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.st()
	type agg struct {
		outdated, newer int
		last            float64
	}
	by := map[string]*agg{}
	for _, r := range s.Registries {
		l := c.m.hosts.label(r.Registry)
		a := by[l]
		if a == nil {
			a = &agg{}
			by[l] = a
		}
		a.outdated += r.Outdated
		a.newer += r.Newer
		a.last = max(a.last, r.LastSuccess)
	}
	for l, a := range by {
		ch <- prometheus.MustNewConstMetric(c.outdated, prometheus.GaugeValue, float64(a.outdated), l)
		ch <- prometheus.MustNewConstMetric(c.newer, prometheus.GaugeValue, float64(a.newer), l)
		if a.last > 0 {
			ch <- prometheus.MustNewConstMetric(c.lastSuccess, prometheus.GaugeValue, a.last, l)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.baseOutdated, prometheus.GaugeValue, float64(s.BaseOutdated))
	ch <- prometheus.MustNewConstMetric(c.rounds, prometheus.CounterValue, float64(s.Rounds))
	ch <- prometheus.MustNewConstMetric(c.interval, prometheus.GaugeValue, s.Interval)
}
