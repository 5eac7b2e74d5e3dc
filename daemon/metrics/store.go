package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// storeCollector reports the store's blobs when scraped. It reads the blob
// directory then rather than keeping counters updated on every commit and
// collection: the store's write paths stay untouched, and the gauges are
// what is on disk (blobs left by an earlier version or a crash included),
// never a running sum that could drift from it. The cost is one directory
// listing and one stat per blob per scrape (about 10 ms for 10,000 blobs),
// taken by one scrape at a time.
type storeCollector struct {
	usage StoreUsage
	size  *prometheus.Desc
	blobs *prometheus.Desc

	mu sync.Mutex // one walk of the store at a time
}

func newStoreCollector(usage StoreUsage) *storeCollector {
	return &storeCollector{
		usage: usage,
		size:  prometheus.NewDesc("wharf_store_size_bytes", "Bytes of the blobs in the image store (manifests, configs and layers as stored), read at scrape time.", nil, nil),
		blobs: prometheus.NewDesc("wharf_store_blobs", "Blobs in the image store, read at scrape time.", nil, nil),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.size
	ch <- c.blobs
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	n, bytes, err := c.usage()
	c.mu.Unlock()
	if err != nil {
		// Reported as an error (the handler logs it and leaves these two
		// out), not as a gauge at 0 that would read as an empty store.
		ch <- prometheus.NewInvalidMetric(c.size, err)
		ch <- prometheus.NewInvalidMetric(c.blobs, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(bytes))
	ch <- prometheus.MustNewConstMetric(c.blobs, prometheus.GaugeValue, float64(n))
}
