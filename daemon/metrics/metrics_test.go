package metrics

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type quietLog struct{ lines []string }

func (l *quietLog) Println(v ...any) { l.lines = append(l.lines, fmt.Sprint(v...)) }

// scrape serves GET path from m's handler and parses the answer.
func scrape(t *testing.T, m *Metrics, log *quietLog) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler(log).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	return fams
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no family %s", name)
	}
next:
	for _, m := range f.Metric {
		for k, v := range labels {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("%s has no series %v", name, labels)
	return 0
}

func TestFamiliesAndLabels(t *testing.T) {
	m := New()
	m.WatchStore(func() (int, int64, error) { return 7, 12345, nil })
	m.RegistryRequest("reg.example:5000", "GET", 200, "ok", 3*time.Millisecond)
	m.RegistryRequest("reg.example:5000", "GET", 200, "ok", 5*time.Millisecond)
	m.RegistryRequest("reg.example:5000", "HEAD", 0, "network_error", time.Second)
	m.CacheLookup("tag", true)
	m.CacheLookup("token", false)
	m.PullsInFlight(1)
	m.PullsInFlight(1)
	m.PullsInFlight(-1)
	m.PulledBytes(1000)
	m.PushedBytes(10)
	m.APIRequest("/images/{name:.*}/json", "GET", 404, time.Millisecond)

	fams := scrape(t, m, &quietLog{})
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"wharf_registry_requests_total", map[string]string{"host": "reg.example:5000", "method": "GET", "status": "200", "outcome": "ok"}, 2},
		{"wharf_registry_requests_total", map[string]string{"method": "HEAD", "status": "none", "outcome": "network_error"}, 1},
		{"wharf_registry_request_duration_seconds", map[string]string{"host": "reg.example:5000", "method": "GET"}, 2},
		{"wharf_registry_cache_hits_total", map[string]string{"cache": "tag"}, 1},
		{"wharf_registry_cache_misses_total", map[string]string{"cache": "tag"}, 0},
		{"wharf_registry_cache_misses_total", map[string]string{"cache": "token"}, 1},
		{"wharf_registry_cache_hits_total", map[string]string{"cache": "digest"}, 0},
		{"wharf_pulls_in_flight", nil, 1},
		{"wharf_pulled_bytes_total", nil, 1000},
		{"wharf_pushed_bytes_total", nil, 10},
		{"wharf_api_requests_total", map[string]string{"route": "/images/{name:.*}/json", "method": "GET", "status": "404"}, 1},
		{"wharf_api_request_duration_seconds", map[string]string{"route": "/images/{name:.*}/json"}, 1},
		{"wharf_store_blobs", nil, 7},
		{"wharf_store_size_bytes", nil, 12345},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, std := range []string{"go_goroutines", "process_start_time_seconds"} {
		if _, ok := fams[std]; !ok {
			t.Errorf("standard family %s missing", std)
		}
	}
}

// Beyond maxHostLabels distinct hosts, the rest share "other"; hosts seen
// before keep their own series.
func TestHostLabelIsCapped(t *testing.T) {
	m := New()
	for i := 0; i < maxHostLabels+50; i++ {
		m.RegistryRequest(fmt.Sprintf("reg%d.example", i), "GET", 200, "ok", time.Millisecond)
	}
	m.RegistryRequest("reg0.example", "GET", 200, "ok", time.Millisecond)
	fams := scrape(t, m, &quietLog{})
	hosts := map[string]bool{}
	for _, s := range fams["wharf_registry_requests_total"].Metric {
		for _, lp := range s.Label {
			if lp.GetName() == "host" {
				hosts[lp.GetValue()] = true
			}
		}
	}
	if len(hosts) != maxHostLabels+1 {
		t.Errorf("%d host label values, want %d (the cap plus %q)", len(hosts), maxHostLabels+1, otherHost)
	}
	if got := value(t, fams, "wharf_registry_requests_total", map[string]string{"host": otherHost}); got != 50 {
		t.Errorf("other = %v, want 50", got)
	}
	if got := value(t, fams, "wharf_registry_requests_total", map[string]string{"host": "reg0.example"}); got != 2 {
		t.Errorf("reg0.example = %v, want 2 (a host seen before the cap keeps its series)", got)
	}
}

// A store that cannot be read leaves its gauges out (never a 0 that reads
// as an empty store) and the rest of the scrape is served.
func TestStoreErrorLeavesTheRestOfTheScrape(t *testing.T) {
	m := New()
	calls := 0
	m.WatchStore(func() (int, int64, error) { calls++; return 0, 0, errors.New("blobs: permission denied") })
	m.PulledBytes(5)
	log := &quietLog{}
	fams := scrape(t, m, log)
	if _, ok := fams["wharf_store_blobs"]; ok {
		t.Error("wharf_store_blobs served although the store could not be read")
	}
	if got := value(t, fams, "wharf_pulled_bytes_total", nil); got != 5 {
		t.Errorf("wharf_pulled_bytes_total = %v, want 5", got)
	}
	if calls != 1 || len(log.lines) == 0 || !strings.Contains(strings.Join(log.lines, "\n"), "permission denied") {
		t.Errorf("store read %d times; logged %q", calls, log.lines)
	}
}

func TestHandlerServesOnlyMetrics(t *testing.T) {
	h := New().Handler(&quietLog{})
	for path, want := range map[string]int{"/metrics": 200, "/": 404, "/debug/pprof/": 404, "/metrics/x": 404} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			b, _ := io.ReadAll(rec.Body)
			t.Errorf("GET %s: %d, want %d (%.80s)", path, rec.Code, want, b)
		}
	}
}

func TestRegistryStatusLabelIsBounded(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   string
	}{
		{0, "none"}, {-1, "none"},
		{200, "200"}, {206, "206"}, {307, "307"}, {401, "401"}, {404, "404"}, {429, "429"}, {503, "503"},
		{203, "2xx"}, {299, "2xx"}, {304, "3xx"}, {399, "3xx"}, {418, "4xx"}, {499, "4xx"}, {505, "5xx"}, {599, "5xx"},
		{101, "1xx"}, {99, "other"}, {600, "other"}, {999, "other"}, {1000, "other"},
	} {
		if got := registryStatusLabel(tc.status); got != tc.want {
			t.Errorf("registryStatusLabel(%d) = %q, want %q", tc.status, got, tc.want)
		}
	}
	// Every code a registry can send, for one host: a bounded set of series.
	m := New()
	for code := 0; code <= 999; code++ {
		m.RegistryRequest("reg.example", "GET", code, "http_error", time.Millisecond)
	}
	fams := scrape(t, m, &quietLog{})
	if n := len(fams["wharf_registry_requests_total"].Metric); n > 30 {
		t.Errorf("%d series for one host, method and outcome, want at most 30", n)
	}
	if got := value(t, fams, "wharf_registry_requests_total", map[string]string{"status": "4xx"}); got != 100-8 {
		t.Errorf("4xx = %v, want %d (the 4xx codes but the 8 wharf acts on)", got, 100-8)
	}
}

func TestLayerIndexFamilies(t *testing.T) {
	m := New()
	l := m.LayerIndexes()
	l.IndexUsage(3, 4096)
	l.IndexBuilt("stream")
	l.IndexEvicted()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mm := range mf.GetMetric() {
			switch {
			case mm.GetGauge() != nil:
				got[mf.GetName()] = mm.GetGauge().GetValue()
			case mm.GetCounter() != nil && len(mm.GetLabel()) == 1 && mm.GetLabel()[0].GetValue() == "stream":
				got[mf.GetName()+"{stream}"] = mm.GetCounter().GetValue()
			case mm.GetCounter() != nil && len(mm.GetLabel()) == 0:
				got[mf.GetName()] = mm.GetCounter().GetValue()
			}
		}
	}
	for k, v := range map[string]float64{"wharf_layer_indexes": 3, "wharf_layer_index_bytes": 4096, "wharf_layer_indexes_built_total{stream}": 1, "wharf_layer_indexes_evicted_total": 1} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
