package metrics

import "github.com/prometheus/client_golang/prometheus"

// Commits reads the store's group-commit counters (at scrape time): the
// write transactions committed and the changes they held.
type Commits func() (commits, changes int64)

// WatchCommits adds wharf_store_commits_total and
// wharf_store_changes_total: changes per commit is the batch size of the
// group commit, the number that says whether concurrent changes share
// their fsync (64 concurrent tags should be a few commits, not 64).
func (m *Metrics) WatchCommits(c Commits) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "wharf_store_commits_total",
			Help: "Write transactions committed to the image store's records (meta.db); a group commit of several changes counts one."},
			func() float64 { n, _ := c(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "wharf_store_changes_total",
			Help: "Changes to the image store's records committed (tags, pulls, removals…); ÷ wharf_store_commits_total is the group commit's batch size."},
			func() float64 { _, n := c(); return float64(n) }),
	)
}

// WatchPartialRestarts adds wharf_partial_restarts_total, read from n at
// scrape time: a download resumed from a partial whose bytes proved wrong
// (kept from another, perhaps hostile, registry under the same digest) and
// that was downloaded again from zero. A count that grows says some
// registry serves bytes that are not the blob they are named by.
func (m *Metrics) WatchPartialRestarts(n func() int64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "wharf_partial_restarts_total",
		Help: "Blob downloads resumed from a partial download whose bytes proved wrong, then downloaded again from byte 0."},
		func() float64 { return float64(n()) }))
}
