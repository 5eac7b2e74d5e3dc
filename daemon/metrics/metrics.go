// Package metrics is wharfd's Prometheus instrumentation: one registry owned
// by the daemon (not client_golang's global default, so that two daemons in
// one process, as in tests, never share or collide), the families below, and
// the /metrics handler. The packages it observes do not import Prometheus:
// each declares the small interface it calls (registry.Observer,
// distribution.Observer, server.Observer) and *Metrics implements them all.
//
// Families:
//
//	wharf_registry_requests_total{host,method,status,outcome}  counter
//	wharf_registry_request_duration_seconds{host,method}        histogram (to the response headers)
//	wharf_registry_cache_hits_total{cache}                      counter (cache = tag, tag_answer, digest, token, blob_location)
//	wharf_registry_cache_misses_total{cache}                    counter
//	wharf_pulls_in_flight                                       gauge
//	wharf_pulled_bytes_total                                    counter (layer bytes read from registries)
//	wharf_pushed_bytes_total                                    counter (blob bytes sent to registries)
//	wharf_api_requests_total{route,method,status}               counter
//	wharf_api_request_duration_seconds{route,method}            histogram (to the end of the response)
//	wharf_store_size_bytes, wharf_store_blobs                   gauges, read from the store at scrape time
//	wharf_store_commits_total, wharf_store_changes_total        counters: meta.db commits and the changes they held (group commit)
//	wharf_partial_restarts_total                                counter: resumed downloads whose kept bytes proved wrong, downloaded again from 0
//	wharf_registry_ratelimit_remaining{host}                    gauge, read from the registry client at scrape time
//	wharf_trust_verifications_total                             counter, signature verdicts computed (not cached), read at scrape time
//	wharf_trust_verdicts_total{decision}                        counter, the same by decision (accepted, rejected, no-policy)
//	wharf_images_outdated{registry}, wharf_images_newer_version{registry},
//	wharf_images_base_outdated, wharf_check_remote_last_success_timestamp_seconds{registry},
//	wharf_check_remote_rounds_total, wharf_check_remote_interval_seconds
//	                                                            the watch (checkremote.go), read at scrape time
//
// plus the standard go_* and process_* collectors.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Label values of the registry caches (registry/metrics.go reports them).
var cacheNames = []string{"tag", "tag_answer", "digest", "token", "blob_location"}

// maxHostLabels caps the distinct values of the host label. Hosts come from
// image names users type (and from token realms registries name), so an
// unbounded label would let anyone who can pull grow the daemon's memory
// and every scrape without limit: Prometheus keeps one series per label
// set. 100 is far more registries than a daemon talks to; beyond it the
// rest are counted together under "other".
const maxHostLabels = 100

// otherHost is the host label of every host beyond maxHostLabels.
const otherHost = "other"

// Registry-latency buckets: a manifest HEAD on a LAN is ~1 ms, a token from
// a distant realm ~1 s, and a registry slower than the 30 s header timeout
// fails anyway.
var registryBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// API-latency buckets: most routes answer in under a millisecond; pulls,
// pushes, loads and saves stream for minutes.
var apiBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// StoreUsage reads the image store's blob count and bytes (at scrape time).
type StoreUsage func() (blobs int, bytes int64, err error)

// Metrics owns the registry of wharfd's metrics. Its methods are safe for
// concurrent use and cheap (a map look-up and an atomic add): they run on
// every registry request and API call.
type Metrics struct {
	reg *prometheus.Registry

	registryRequests *prometheus.CounterVec
	registryDuration *prometheus.HistogramVec
	cacheHits        *prometheus.CounterVec
	cacheMisses      *prometheus.CounterVec
	pullsInFlight    prometheus.Gauge
	pulledBytes      prometheus.Counter
	pushedBytes      prometheus.Counter
	apiRequests      *prometheus.CounterVec
	apiDuration      *prometheus.HistogramVec
	syncImages       *prometheus.CounterVec

	hosts labelCap
}

// New returns the metrics with every family registered but the store's
// (WatchStore).
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		registryRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_registry_requests_total",
			Help: "HTTP requests wharfd sent to registries and token servers, each attempt counted (retries included), by host:port, method, status (\"none\" without an answer) and outcome (ok, http_error, network_error, canceled).",
		}, []string{"host", "method", "status", "outcome"}),
		registryDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wharf_registry_request_duration_seconds",
			Help:    "Time from sending a registry request to its response headers (or its failure), by host:port and method.",
			Buckets: registryBuckets,
		}, []string{"host", "method"}),
		cacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_registry_cache_hits_total",
			Help: "Registry cache look-ups answered from memory: tag (a tag of a repository already read, resolved by HEAD instead of GET), digest (a manifest or config from the content cache), token (a bearer or basic token still valid), tag_answer (a tag → digest answer younger than the max-age the update check allowed), blob_location (a blob range read sent straight to the store URL the registry redirected to before).",
		}, []string{"cache"}),
		cacheMisses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_registry_cache_misses_total",
			Help: "Registry cache look-ups that had to ask the registry (see wharf_registry_cache_hits_total).",
		}, []string{"cache"}),
		pullsInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wharf_pulls_in_flight",
			Help: "Image pulls running now.",
		}),
		pulledBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wharf_pulled_bytes_total",
			Help: "Layer bytes read from registries by pulls (a layer shared by concurrent pulls is read once).",
		}),
		pushedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wharf_pushed_bytes_total",
			Help: "Blob bytes read from the store and sent to registries by pushes (a retried upload counts again).",
		}),
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_api_requests_total",
			Help: "API requests served, by route template (the /vN.NN prefix removed; \"unmatched\" for no route), method and status.",
		}, []string{"route", "method", "status"}),
		apiDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wharf_api_request_duration_seconds",
			Help:    "Time to serve an API request, to the end of its response (streams included), by route template and method.",
			Buckets: apiBuckets,
		}, []string{"route", "method"}),
		syncImages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_sync_images_total",
			Help: "Images wharf sync finished with, by source registry host:port and outcome (synced: copied; skipped: the destination had the digest, one HEAD each side; failed).",
		}, []string{"registry", "outcome"}),
		hosts: labelCap{max: maxHostLabels, seen: map[string]struct{}{}},
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.registryRequests, m.registryDuration, m.cacheHits, m.cacheMisses,
		m.pullsInFlight, m.pulledBytes, m.pushedBytes,
		m.apiRequests, m.apiDuration, m.syncImages,
	)
	// Every cache is listed from the start, at 0, so that a ratio of hits
	// to look-ups has both series before the first miss.
	for _, c := range cacheNames {
		m.cacheHits.WithLabelValues(c)
		m.cacheMisses.WithLabelValues(c)
	}
	return m
}

// WatchStore adds the store gauges, read through usage at each scrape.
func (m *Metrics) WatchStore(usage StoreUsage) {
	m.reg.MustRegister(newStoreCollector(usage))
}

// Registry is the Prometheus registry (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// maxConcurrentScrapes bounds scrapes served at once: a scrape walks the
// store's blob directory, and a tight loop of scrapes must not make that
// walk the daemon's main work. Beyond it promhttp answers 503.
const maxConcurrentScrapes = 4

// Handler serves /metrics and nothing else (404 for any other path). A
// family that fails to collect (the store unreadable) is left out of the
// scrape and logged to errLog; the others are still served.
func (m *Metrics) Handler(errLog promhttp.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            errLog,
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            m.reg, // promhttp_metric_handler_errors_total
		MaxRequestsInFlight: maxConcurrentScrapes,
		Timeout:             30 * time.Second,
	}))
	return mux
}

// RegistryRequest implements registry.Observer.
func (m *Metrics) RegistryRequest(host, method string, status int, outcome string, d time.Duration) {
	host = m.hosts.label(host)
	m.registryRequests.WithLabelValues(host, method, registryStatusLabel(status), outcome).Inc()
	m.registryDuration.WithLabelValues(host, method).Observe(d.Seconds())
}

// CacheLookup implements registry.Observer.
func (m *Metrics) CacheLookup(cache string, hit bool) {
	if hit {
		m.cacheHits.WithLabelValues(cache).Inc()
	} else {
		m.cacheMisses.WithLabelValues(cache).Inc()
	}
}

// PullsInFlight implements distribution.Observer.
func (m *Metrics) PullsInFlight(delta int) { m.pullsInFlight.Add(float64(delta)) }

// PulledBytes implements distribution.Observer.
func (m *Metrics) PulledBytes(n int64) { m.pulledBytes.Add(float64(n)) }

// SyncImage implements distribution.Observer.
func (m *Metrics) SyncImage(registry, outcome string) {
	m.syncImages.WithLabelValues(m.hosts.label(registry), outcome).Inc()
}

// PushedBytes implements distribution.Observer.
func (m *Metrics) PushedBytes(n int64) { m.pushedBytes.Add(float64(n)) }

// APIRequest implements server.Observer.
func (m *Metrics) APIRequest(route, method string, status int, d time.Duration) {
	m.apiRequests.WithLabelValues(route, method, statusLabel(status)).Inc()
	m.apiDuration.WithLabelValues(route, method).Observe(d.Seconds())
}

// statusLabel is the status of an API answer, wharfd's own, as a label:
// "none" when there was no answer.
func statusLabel(status int) string {
	if status <= 0 {
		return "none"
	}
	return strconv.Itoa(status)
}

// registryStatuses are the statuses wharf acts on (registry and
// registry/transport name each one): they keep their code as the label.
var registryStatuses = map[int]string{}

func init() {
	for _, code := range []int{200, 201, 202, 204, 206, 301, 302, 303, 307, 308, 400, 401, 403, 404, 405, 408, 416, 429, 500, 501, 502, 503, 504} {
		registryStatuses[code] = strconv.Itoa(code)
	}
}

// registryStatusLabel is a registry's status as a label. The registry
// chooses the code (net/http passes on anything from 100 to 999), and no
// label may take a value someone else chooses (docs/security.md): a code
// wharf acts on is itself, any other its class "1xx" … "5xx", beyond 599
// "other", no answer "none". At most 23 + 5 + 2 = 30 values per host,
// method and outcome, where a registry cycling through codes would make
// one series per code (40 inspects, 41 series).
func registryStatusLabel(status int) string {
	switch {
	case status <= 0:
		return "none"
	case registryStatuses[status] != "":
		return registryStatuses[status]
	case status >= 100 && status < 600:
		return strconv.Itoa(status/100) + "xx"
	}
	return "other"
}

// labelCap hands out at most max distinct label values; the rest share
// otherHost. The first max hosts seen keep their names for the daemon's
// life (a series, once exported, should not change its meaning).
type labelCap struct {
	max int

	mu   sync.Mutex
	seen map[string]struct{}
}

func (c *labelCap) label(v string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[v]; ok {
		return v
	}
	if len(c.seen) >= c.max {
		return otherHost
	}
	c.seen[v] = struct{}{}
	return v
}
