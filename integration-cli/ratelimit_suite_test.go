package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// RateLimitSuite: a proxy in front of the real registry plays Docker
// Hub's rate limiting — RateLimit-Limit/-Remaining headers on every answer,
// and, while limiting, 429 with Retry-After: 2 (issue 20).
type RateLimitSuite struct {
	suiteFixture
	reg   *testregistry.Registry
	proxy *hostile.HookProxy
	d     *Daemon
	url   string // the metrics endpoint

	mu       sync.Mutex
	limiting bool          // answer the next batch and the back-off with 429
	batch    int           // manifest requests of the batch, held until all are in
	released chan struct{} // closed when the batch is answered
	at       time.Time     // when it was
	during   []string      // requests while limiting, after the batch
}

func TestRateLimitSuite(t *testing.T) { t.Parallel(); runSuite(t, &RateLimitSuite{}) }

const (
	rateLimitBatch = 64
	// rateLimitFor: how long after the batch's 429s the proxy still
	// limits. The gate opens 2 s after them (Retry-After: 2) for one
	// probe, which is answered 429 again; the next probe, 2 s later, is
	// past these 3 s: 1 s of slack either way on a loaded machine.
	rateLimitFor = 3 * time.Second
)

func (s *RateLimitSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
	p, err := hostile.NewHookProxy(s.reg.URL, s.before, nil)
	c.Assert(err, check.IsNil)
	s.proxy = p
	s.closeAtEnd(p.Close)
	s.d = s.startDaemon(c, "--metrics-addr", "127.0.0.1:0")
	m := metricsListening.FindStringSubmatch(s.d.Log())
	c.Assert(m, check.NotNil, check.Commentf("no metrics address in the log:\n%s", s.d.Log()))
	s.url = m[1]
}

// before answers the manifest requests of the batch (held until all
// rateLimitBatch are in, so that every one is sent before any 429 comes
// back) and of the rateLimitFor that follow with 429 + Retry-After: 2;
// everything else goes to the registry with Docker Hub's headers added.
func (s *RateLimitSuite) before(w http.ResponseWriter, r *http.Request) bool {
	w.Header().Set("RateLimit-Limit", "100;w=21600")
	s.mu.Lock()
	if !s.limiting || !strings.Contains(r.URL.Path, "/manifests/") {
		s.mu.Unlock()
		w.Header().Set("RateLimit-Remaining", "76;w=21600")
		return false
	}
	if s.batch < rateLimitBatch {
		s.batch++
		if s.batch == rateLimitBatch {
			s.at = time.Now()
			close(s.released)
		}
		released := s.released
		s.mu.Unlock()
		select {
		case <-released:
		case <-r.Context().Done():
		case <-time.After(time.Minute): // bound: the test then fails on its counts
		}
		tooManyRequests(w)
		return true
	}
	limited := time.Since(s.at) < rateLimitFor
	if limited {
		s.during = append(s.during, fmt.Sprintf("%s %s at +%v", r.Method, r.URL.Path, time.Since(s.at).Round(time.Millisecond)))
	}
	s.mu.Unlock()
	if limited {
		tooManyRequests(w)
		return true
	}
	w.Header().Set("RateLimit-Remaining", "76;w=21600")
	return false
}

func tooManyRequests(w http.ResponseWriter) {
	w.Header().Set("RateLimit-Remaining", "0;w=21600")
	w.Header().Set("Retry-After", "2")
	hostile.WriteError(w, http.StatusTooManyRequests, "TOOMANYREQUESTS", "You have reached your pull rate limit.")
}

type remoteAnswer struct {
	Message   string
	RateLimit *struct {
		Limit, Remaining, Window int64
		Host                     string
		Seen                     time.Time
	}
}

func (s *RateLimitSuite) inspect(name string) (remoteAnswer, error) {
	var a remoteAnswer
	resp, err := s.d.HTTPClient().Get("http://wharfd/v1.50/images/" + name + "/json?remote=1")
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&a); err != nil {
		return a, err
	}
	if resp.StatusCode != http.StatusOK {
		return a, fmt.Errorf("inspect %s: %d %s", name, resp.StatusCode, a.Message)
	}
	return a, nil
}

// 64 concurrent remote inspects (64 tags: one shared inspect would be one
// request anyway) all answered 429 + Retry-After: 2 back the registry off
// once: during the 3 s it goes on limiting, the proxy sees one request
// (the probe when the gate opens), not 64; all 64 succeed after. Before
// the gate each retried on its own: 64 requests during the back-off.
func (s *RateLimitSuite) TestConcurrentInspectsShareOneBackoff(c *check.C) {
	img := pushImage(c, s.reg, "rl/app", "warm", testregistry.ImageOptions{})
	ctx, cancel := fixtureCtx()
	defer cancel()
	for i := 0; i < rateLimitBatch; i++ {
		c.Assert(s.reg.Client().PutManifest(ctx, "rl/app", fmt.Sprintf("t%d", i), img.Manifest), check.IsNil)
	}
	// Warm: the host's scheme and the repository are known, so each
	// inspect below is one HEAD of its tag.
	_, err := s.inspect(s.proxy.Host + "/rl/app:warm")
	c.Assert(err, check.IsNil)

	s.mu.Lock()
	s.limiting, s.batch, s.released, s.during = true, 0, make(chan struct{}), nil
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.limiting = false
		s.mu.Unlock()
	}()

	var wg sync.WaitGroup
	answers := make([]remoteAnswer, rateLimitBatch)
	errs := make([]error, rateLimitBatch)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = s.inspect(fmt.Sprintf("%s/rl/app:t%d", s.proxy.Host, i))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		c.Check(err, check.IsNil, check.Commentf("inspect %d", i))
	}
	s.mu.Lock()
	during, batch := s.during, s.batch
	s.mu.Unlock()
	c.Assert(batch, check.Equals, rateLimitBatch)
	c.Check(during, check.HasLen, 1, check.Commentf("requests during the back-off:\n%s", strings.Join(during, "\n")))

	// The headers the proxy adds: in every answer, in /info, in /metrics.
	for i, a := range answers {
		if errs[i] != nil {
			continue
		}
		rl := a.RateLimit
		c.Assert(rl, check.NotNil, check.Commentf("inspect %d has no RateLimit", i))
		c.Check(*rl, check.DeepEquals, struct {
			Limit, Remaining, Window int64
			Host                     string
			Seen                     time.Time
		}{100, 76, 21600, s.proxy.Host, rl.Seen})
		c.Check(rl.Seen.IsZero(), check.Equals, false)
	}
	var info struct {
		WharfRegistries []struct {
			Host      string
			RateLimit *struct{ Limit, Remaining, Window int64 }
		}
	}
	s.d.Get(c, "/v1.50/info").JSON(c, &info)
	found := false
	for _, r := range info.WharfRegistries {
		if r.Host == s.proxy.Host && r.RateLimit != nil {
			found = true
			c.Check(*r.RateLimit, check.Equals, struct{ Limit, Remaining, Window int64 }{100, 76, 21600})
		}
	}
	c.Check(found, check.Equals, true, check.Commentf("/info: %+v", info))
	// And where a user reads it: wharf info (it printed none before).
	out := s.d.WharfOK(c, "info").Stdout
	c.Check(strings.Contains(out, " Registry Rate Limits:\n  "+s.proxy.Host+": 76 of 100 remaining per 6h0m0s"), check.Equals, true, check.Commentf("wharf info:\n%s", out))
	fams := (&MetricsSuite{url: s.url}).scrape(c)
	c.Check(fams.value(c, "wharf_registry_ratelimit_remaining", map[string]string{"host": s.proxy.Host}), check.Equals, 76.0)
}
