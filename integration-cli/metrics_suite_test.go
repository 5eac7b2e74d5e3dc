package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// MetricsSuite: wharfd started with --metrics-addr serves Prometheus
// metrics on a listener of its own (never on the API socket), and a scrape
// after real registry traffic (token auth) shows every family with the
// values that traffic implies (issue 15).
type MetricsSuite struct {
	suiteFixture
	reg *testregistry.Registry
	d   *Daemon
	url string // http://127.0.0.1:PORT/metrics
}

func TestMetricsSuite(t *testing.T) { t.Parallel(); runSuite(t, &MetricsSuite{}) }

// metricsStageTimeout bounds each wait for wharfd to reach a stage (a held
// blob requested, a pull ending) on a loaded CI box.
const metricsStageTimeout = time.Minute

var metricsListening = regexp.MustCompile(`metrics listening on (http://127\.0\.0\.1:[0-9]+/metrics)`)

func (s *MetricsSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken})
	// Port 0: wharfd takes a free port and logs it (before the API
	// answers, so the log has it once StartDaemon returns).
	s.d = s.startDaemon(c, "--metrics-addr", "127.0.0.1:0")
	m := metricsListening.FindStringSubmatch(s.d.Log())
	c.Assert(m, check.NotNil, check.Commentf("no metrics address in the log:\n%s", s.d.Log()))
	s.url = m[1]
}

// scrape GETs /metrics and parses it as Prometheus text.
func (s *MetricsSuite) scrape(c *check.C) metricFamilies {
	resp, err := http.Get(s.url)
	c.Assert(err, check.IsNil)
	defer resp.Body.Close()
	c.Assert(resp.StatusCode, check.Equals, http.StatusOK)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	c.Assert(err, check.IsNil)
	return metricFamilies(fams)
}

type metricFamilies map[string]*dto.MetricFamily

// sum adds the series of family name whose labels include labels: counter
// and gauge values, or a histogram's sample count. ok is false when no
// series matches.
func (f metricFamilies) sum(name string, labels map[string]string) (total float64, ok bool) {
	fam := f[name]
	if fam == nil {
		return 0, false
	}
	for _, m := range fam.Metric {
		have := map[string]string{}
		for _, lp := range m.Label {
			have[lp.GetName()] = lp.GetValue()
		}
		match := true
		for k, v := range labels {
			if have[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		ok = true
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total, ok
}

func (f metricFamilies) value(c *check.C, name string, labels map[string]string) float64 {
	v, ok := f.sum(name, labels)
	c.Assert(ok, check.Equals, true, check.Commentf("no series %s%v in the scrape", name, labels))
	return v
}

func (s *MetricsSuite) TestScrapeAfterInspectPullPushAndAPI(c *check.C) {
	app := pushImage(c, s.reg, "metrics/app", "v1", testregistry.ImageOptions{Layers: 2, LayerSize: 48 << 10})
	d, auth := s.d, auth(s.reg)
	name := s.reg.Host + "/metrics/app"
	// The suite's tests share the daemon: counters are compared as the
	// change since this scrape. From here on only wharfd talks to the
	// registry.
	before := s.scrape(c)
	s.reg.ResetCounters()

	// Two remote inspects: the second resolves the tag by HEAD, with the
	// token and the documents from the caches.
	var betweenInspects metricFamilies
	for i := 0; i < 2; i++ {
		if i == 1 {
			betweenInspects = s.scrape(c)
		}
		r := d.Get(c, "/v1.50/images/"+name+":v1/json?remote=1", "X-Registry-Auth", auth)
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("remote inspect %d: %s", i, r))
	}
	afterInspects := s.scrape(c)
	_, lines := d.Pull(c, name, "v1", auth)
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("pull"))
	// A push of an image the registry has not seen uploads its blobs (an
	// image pulled from this registry would be mounted, not uploaded).
	imported := s.reg.Host + "/metrics/imported"
	d.Import(c, imported+":v1")
	_, lines = d.Push(c, imported, "v1", auth)
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("push"))
	const listCalls = 3
	for i := 0; i < listCalls; i++ {
		c.Assert(d.Get(c, "/v1.50/images/json").Status, check.Equals, http.StatusOK)
	}

	after := s.scrape(c)
	delta := func(name string, labels map[string]string) float64 {
		old, _ := before.sum(name, labels)
		return after.value(c, name, labels) - old
	}
	f := after

	// Registry requests: every request the registry and its token server
	// counted, wharfd counted too, under the host:port it used.
	regHost, tokenHost := s.reg.Counter.Host, s.reg.TokenCounter.Host
	c.Check(delta("wharf_registry_requests_total", map[string]string{"host": regHost}), check.Equals, float64(s.reg.Counter.Total()),
		check.Commentf("registry requests; the registry saw: %v", s.reg.Counter.Requests()))
	c.Check(delta("wharf_registry_requests_total", map[string]string{"host": tokenHost}), check.Equals, float64(s.reg.TokenCounter.Total()),
		check.Commentf("token requests; the token server saw: %v", s.reg.TokenCounter.Requests()))
	// The daemon's first request to the registry, in whichever test came
	// first, was answered with a token challenge.
	c.Check(f.value(c, "wharf_registry_requests_total", map[string]string{"host": regHost, "status": "401", "outcome": "http_error"}) >= 1, check.Equals, true,
		check.Commentf("a cold daemon is challenged at least once"))
	c.Check(delta("wharf_registry_requests_total", map[string]string{"host": regHost, "method": "HEAD", "outcome": "ok"}) >= 1, check.Equals, true,
		check.Commentf("the warm inspect resolves its tag with HEAD"))
	if _, ok := f.sum("wharf_registry_requests_total", map[string]string{"outcome": "network_error"}); ok {
		c.Errorf("network errors counted with a healthy registry")
	}
	c.Check(delta("wharf_registry_request_duration_seconds", map[string]string{"host": regHost}), check.Equals, float64(s.reg.Counter.Total()))

	// Caches: the first inspect missed the tag, token and digest caches
	// (a repository this daemon had not read), the second hit each and
	// missed none.
	for _, cache := range []string{"tag", "token", "digest"} {
		labels := map[string]string{"cache": cache}
		c.Check(betweenInspects.value(c, "wharf_registry_cache_misses_total", labels)-before.value(c, "wharf_registry_cache_misses_total", labels) >= 1, check.Equals, true,
			check.Commentf("%s cache misses of the first inspect", cache))
		c.Check(afterInspects.value(c, "wharf_registry_cache_hits_total", labels)-betweenInspects.value(c, "wharf_registry_cache_hits_total", labels) >= 1, check.Equals, true,
			check.Commentf("%s cache hits of the repeat inspect", cache))
		c.Check(afterInspects.value(c, "wharf_registry_cache_misses_total", labels), check.Equals, betweenInspects.value(c, "wharf_registry_cache_misses_total", labels),
			check.Commentf("%s cache misses of the repeat inspect", cache))
	}

	// Transfers: the pull read both layers, the push sent at least the
	// imported layer; no pull is running now.
	var layerBytes int
	for _, l := range app.Layers {
		layerBytes += len(l.Data)
	}
	c.Check(delta("wharf_pulled_bytes_total", nil), check.Equals, float64(layerBytes))
	importedLayer := d.Inspect(c, imported+":v1")["Size"].(float64)
	c.Check(delta("wharf_pushed_bytes_total", nil) >= importedLayer && importedLayer > 0, check.Equals, true,
		check.Commentf("pushed %v bytes, the imported layer is %v", delta("wharf_pushed_bytes_total", nil), importedLayer))
	c.Check(f.value(c, "wharf_pulls_in_flight", nil), check.Equals, 0.0)

	// API: by route template, whatever the name in the path.
	c.Check(delta("wharf_api_request_duration_seconds", map[string]string{"route": "/images/json", "method": "GET"}), check.Equals, float64(listCalls))
	c.Check(delta("wharf_api_requests_total", map[string]string{"route": "/images/json", "method": "GET", "status": "200"}), check.Equals, float64(listCalls))
	c.Check(delta("wharf_api_requests_total", map[string]string{"route": "/images/{name:.*}/json", "method": "GET", "status": "200"}) >= 2, check.Equals, true)
	c.Check(delta("wharf_api_requests_total", map[string]string{"route": "/images/create", "method": "POST", "status": "200"}), check.Equals, 2.0, check.Commentf("one pull, one import"))
	c.Check(delta("wharf_api_requests_total", map[string]string{"route": "/images/{name:.*}/push", "method": "POST", "status": "200"}), check.Equals, 1.0)

	// Store: what is on disk now.
	var blobs int
	var size int64
	for _, n := range blobFiles(c, d.Root) {
		blobs++
		size += n
	}
	c.Check(f.value(c, "wharf_store_blobs", nil), check.Equals, float64(blobs))
	c.Check(f.value(c, "wharf_store_size_bytes", nil), check.Equals, float64(size))
	c.Check(blobs > 0, check.Equals, true)

	// The standard collectors.
	for _, std := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		_, ok := f[std]
		c.Check(ok, check.Equals, true, check.Commentf("%s missing", std))
	}
}

// The API socket has no /metrics route, versioned or not.
func (s *MetricsSuite) TestMetricsAreNotOnTheAPISocket(c *check.C) {
	for _, p := range []string{"/metrics", "/v1.50/metrics"} {
		r := s.d.Get(c, p)
		c.Check(r.Status, check.Equals, http.StatusNotFound, check.Commentf("GET %s on the API socket: %s", p, r))
		c.Check(strings.Contains(string(r.Body), "wharf_"), check.Equals, false)
	}
}

// A scrape during a pull sees it in flight: the registry's proxy holds the
// pull's only layer until the test has scraped, then lets it through.
func (s *MetricsSuite) TestPullInFlightDuringAPull(c *check.C) {
	img := pushImage(c, s.reg, "metrics/held", "v1", testregistry.ImageOptions{Layers: 1, LayerSize: 32 << 10})
	held := img.Layers[0].Digest
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.reg.Counter.SetBefore(func(r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+held) {
			return
		}
		once.Do(func() { close(arrived) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer s.reg.Counter.SetBefore(nil)
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	before := s.scrape(c).value(c, "wharf_pulled_bytes_total", nil)
	result := make(chan string, 1)
	go func() { result <- s.pullWithAuth(s.reg.Host+"/metrics/held", "v1") }()
	select {
	case <-arrived:
	case msg := <-result:
		c.Fatalf("the pull ended before asking for the held layer: %q", msg)
	case <-time.After(metricsStageTimeout):
		c.Fatalf("the pull never asked for layer %s\n%s", held, s.d.Log())
	}
	c.Check(s.scrape(c).value(c, "wharf_pulls_in_flight", nil), check.Equals, 1.0)
	close(release)
	released = true
	select {
	case msg := <-result:
		c.Assert(msg, check.Equals, "")
	case <-time.After(metricsStageTimeout):
		c.Fatalf("the pull did not end once its layer was released")
	}
	f := s.scrape(c)
	c.Check(f.value(c, "wharf_pulls_in_flight", nil), check.Equals, 0.0)
	c.Check(f.value(c, "wharf_pulled_bytes_total", nil)-before, check.Equals, float64(len(img.Layers[0].Data)))
}

// pullWithAuth pulls name:tag with the registry's credentials, without
// check (it runs in a goroutine): "" on success, else the error.
func (s *MetricsSuite) pullWithAuth(name, tag string) string {
	q := url.Values{"fromImage": {name}, "tag": {tag}}
	req, err := http.NewRequest(http.MethodPost, "http://wharfd/v1.50/images/create?"+q.Encode(), nil)
	if err != nil {
		return err.Error()
	}
	req.Header.Set("X-Registry-Auth", auth(s.reg))
	resp, err := s.d.HTTPClient().Do(req)
	if err != nil {
		return "transport: " + err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "read: " + err.Error()
	}
	if resp.StatusCode != http.StatusOK || strings.Contains(string(b), `"errorDetail"`) {
		return fmt.Sprintf("status %d: %s", resp.StatusCode, b)
	}
	return ""
}

// The group commit is counted: a tag alone is one commit of one change;
// 32 concurrent tags of distinct images are 32 changes in at most 32
// commits (how many depends on how they overlap; graph/store's
// TestConcurrentTagsShareOneCommit fixes the overlap and wants 2).
func (s *MetricsSuite) TestStoreCommitsCountChanges(c *check.C) {
	d := s.d
	const n = 32
	for i := 0; i < n; i++ {
		d.Import(c, fmt.Sprintf("commits/img%d:v1", i))
	}
	delta := func(before, after metricFamilies, name string) float64 {
		return after.value(c, name, nil) - before.value(c, name, nil)
	}
	tag := func(i int, tag string) error {
		req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://wharfd/v1.50/images/commits/img%d:v1/tag?repo=commits/img%d&tag=%s", i, i, tag), nil)
		if err != nil {
			return err
		}
		resp, err := d.HTTPClient().Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("tag img%d: %d %s", i, resp.StatusCode, b)
		}
		return nil
	}

	before := s.scrape(c)
	for i := 0; i < 3; i++ {
		c.Assert(tag(i, "one"), check.IsNil)
	}
	after := s.scrape(c)
	c.Check(delta(before, after, "wharf_store_commits_total"), check.Equals, 3.0)
	c.Check(delta(before, after, "wharf_store_changes_total"), check.Equals, 3.0)

	before = after
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) { errs <- tag(i, "many") }(i)
	}
	for i := 0; i < n; i++ {
		c.Assert(<-errs, check.IsNil)
	}
	after = s.scrape(c)
	commits := delta(before, after, "wharf_store_commits_total")
	c.Check(delta(before, after, "wharf_store_changes_total"), check.Equals, float64(n))
	c.Check(commits >= 1 && commits <= n, check.Equals, true, check.Commentf("%v commits for %d tags", commits, n))
	c.Logf("%d concurrent tags: %v commits", n, commits)
}
