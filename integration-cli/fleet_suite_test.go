package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// FleetSuite: a fleet of wharfd behind a shared pull-through cache, as
// docs/deploy.md describes it. An upstream registry with token auth; the
// CNCF registry in proxy mode in front of it (with its credentials upstream
// and, when redis-server is installed, a redis blob-descriptor cache);
// three wharfd that reach the upstream's names through the proxy, each by
// the hosts.toml in its own --certs-dir. The upstream's requests are
// counted.
type FleetSuite struct {
	suiteFixture
	front  *testregistry.Front // the upstream's one host: registry and tokens
	up     *testregistry.Registry
	proxy  *testregistry.Registry
	redis  *testregistry.Redis
	nodes  []*Daemon
	app    *testregistry.Image
	multi  *testregistry.Index
	dumped bool
}

func TestFleetSuite(t *testing.T) { t.Parallel(); runSuite(t, &FleetSuite{}) }

// fleetTTL is the proxy's TTL: far beyond the test, so that every
// manifest is fetched from the upstream at most once within it.
const fleetTTL = time.Hour

const (
	fleetNodes    = 3
	fleetInspects = 20 // per node
)

func (s *FleetSuite) SetUpSuite(c *check.C) {
	needBinaries(c)
	s.front = testregistry.NewFront()
	s.closeAtEnd(s.front.Close)
	s.up = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken, TokenRealm: s.front.URL + "/token"})
	// Registry and tokens through their counters: every upstream request counted.
	c.Assert(s.front.Route(s.up.URL, s.up.TokenCounter.URL), check.IsNil)
	s.app = pushImage(c, s.up, "fleet/app", "1", testregistry.ImageOptions{Layers: 3, LayerSize: 64 << 10})
	s.multi = pushIndex(c, s.up, "fleet/multi", "1", testregistry.IndexOptions{})

	opts := testregistry.Options{
		ProxyRemoteURL: s.front.URL,
		ProxyUsername:  s.up.Username,
		ProxyPassword:  s.up.Password,
		ProxyTTL:       fleetTTL,
	}
	var err error
	s.redis, err = testregistry.StartRedis(c.MkDir())
	switch {
	case errors.Is(err, testregistry.ErrNoRedis):
		c.Logf("FLEET: %v: the proxy runs with its in-memory blob-descriptor cache, the redis part is skipped", err)
	case err != nil:
		c.Fatal(err)
	default:
		s.closeAtEnd(s.redis.Close)
		opts.Redis = s.redis.Addr
	}
	s.proxy = s.startRegistry(c, opts)

	for i := 0; i < fleetNodes; i++ {
		d := NewDaemon(c)
		certs := filepath.Join(d.Home, "certs.d")
		writeHostsToml(c, certs, s.front.Host, fmt.Sprintf(`# the shared pull-through cache first, the registry itself last
server = "http://%s"

[host."http://%s"]
  capabilities = ["pull", "resolve"]
`, s.front.Host, s.proxy.Host))
		s.killAtEnd(d)
		d.Start(c, "--certs-dir", certs)
		s.nodes = append(s.nodes, d)
	}
}

// userAuth is what each node's user sends: credentials for the upstream.
func (s *FleetSuite) userAuth() string {
	return RegistryAuth(s.up.Username, s.up.Password, s.front.Host)
}

// inspect is one remote inspect through node d; it returns the host that served it.
func (s *FleetSuite) inspect(d *Daemon, name string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://wharfd/v1.50/images/"+name+"/json?remote=1", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Registry-Auth", s.userAuth())
	resp, err := d.HTTPClient().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var m struct{ Registry, ServedBy, Message string }
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&m); err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK || m.Registry != s.front.Host {
		return "", fmt.Errorf("inspect %s: %d %s (registry %q)", name, resp.StatusCode, m.Message, m.Registry)
	}
	return m.ServedBy, nil
}

// inspectAll runs n remote inspects on every node at once (alternating
// the two tags) and returns how many each host served.
func (s *FleetSuite) inspectAll(c *check.C, n int) map[string]int {
	names := []string{s.front.Host + "/fleet/app:1", s.front.Host + "/fleet/multi:1"}
	var mu sync.Mutex
	served := map[string]int{}
	var errs []error
	var wg sync.WaitGroup
	for _, d := range s.nodes {
		wg.Add(1)
		go func(d *Daemon) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				host, err := s.inspect(d, names[i%len(names)])
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				served[host]++
				mu.Unlock()
			}
		}(d)
	}
	wg.Wait()
	c.Assert(errs, check.HasLen, 0, check.Commentf("%v", errs))
	return served
}

// upstreamByPath counts the upstream's manifest and blob requests by
// method and path.
func (s *FleetSuite) upstreamByPath() map[string]int {
	out := map[string]int{}
	for _, e := range s.up.Counter.Requests() {
		e, _, _ = strings.Cut(e, "?")
		if strings.Contains(e, "/manifests/") || strings.Contains(e, "/blobs/") {
			out[e]++
		}
	}
	return out
}

// TestFleetSharesOneUpstreamFetchAndSurvivesTheProxy is the fleet in one
// story: 3 × 20 remote inspects and 3 pulls through the proxy cost the
// upstream each manifest and each blob once; then the proxy dies mid-way
// and every node falls back to the upstream, with one warning each.
func (s *FleetSuite) TestFleetSharesOneUpstreamFetchAndSurvivesTheProxy(c *check.C) {
	s.up.ResetCounters()
	// One node asks first (its inspects and pulls fill the proxy), then
	// the whole fleet at once. The proxy does not coalesce misses that
	// arrive together: each is fetched from the remote while the cache
	// fills (docs/deploy.md), so the cold start is one node's.
	for _, name := range []string{"/fleet/app:1", "/fleet/multi:1"} {
		host, err := s.inspect(s.nodes[0], s.front.Host+name)
		c.Assert(err, check.IsNil)
		c.Assert(host, check.Equals, s.proxy.Host)
	}
	s.pullAll(c, s.nodes[:1])
	served := s.inspectAll(c, fleetInspects)
	c.Assert(served, check.DeepEquals, map[string]int{s.proxy.Host: fleetNodes * fleetInspects},
		check.Commentf("every inspect is served by the proxy\n--- node 0 ---\n%s\n--- proxy ---\n%s", logTail(s.nodes[0]), s.proxyLog()))
	s.pullAll(c, s.nodes[1:])
	for _, d := range s.nodes {
		c.Assert(d.Inspect(c, s.front.Host+"/fleet/app:1")["Id"], check.Equals, s.app.ID())
	}

	// What the upstream saw: each manifest fetched (GET) at most once
	// within the proxy's TTL, each blob once. The proxy checks a tag
	// with the remote (HEAD) each time a client resolves it: counted
	// apart (Docker Hub does not count HEADs against its pull limit).
	byPath := s.upstreamByPath()
	var lines []string
	manifestGets, blobGets, tagHeads := 0, 0, 0
	for p, n := range byPath {
		lines = append(lines, fmt.Sprintf("%3d %s", n, p))
		switch {
		case strings.HasPrefix(p, "GET ") && strings.Contains(p, "/manifests/"):
			manifestGets += n
			c.Check(n, check.Equals, 1, check.Commentf("%s fetched %d times within the proxy TTL", p, n))
		case strings.HasPrefix(p, "GET ") && strings.Contains(p, "/blobs/"):
			blobGets += n
			c.Check(n, check.Equals, 1, check.Commentf("%s fetched %d times", p, n))
		case strings.HasPrefix(p, "HEAD ") && strings.Contains(p, "/manifests/"):
			tagHeads += n
		}
	}
	sort.Strings(lines)
	total, tokens := s.up.Counter.Total(), s.up.TokenCounter.Total()
	c.Logf("FLEET: %d nodes × (%d remote inspects + 2 pulls) through the proxy: the upstream saw %d requests (%d manifest GETs, %d manifest HEADs, %d blob GETs) and %d token requests\n%s",
		fleetNodes, fleetInspects, total, manifestGets, tagHeads, blobGets, tokens, strings.Join(lines, "\n"))
	for _, b := range append(s.app.Layers, s.app.Config) {
		c.Check(byPath["GET /v2/fleet/app/blobs/"+b.Digest], check.Equals, 1, check.Commentf("blob %s of the pulled image", b.Digest))
	}
	if s.redis != nil {
		keys, err := s.redis.Keys()
		c.Assert(err, check.IsNil)
		c.Check(keys > 0, check.Equals, true, check.Commentf("the proxy keeps its blob descriptors in redis"))
	}

	// The proxy dies mid-way through a second round.
	for _, d := range s.nodes {
		c.Assert(strings.Contains(d.Log(), "mirror failed"), check.Equals, false)
	}
	half := s.inspectAll(c, fleetInspects/2)
	c.Assert(half[s.proxy.Host], check.Equals, fleetNodes*fleetInspects/2)
	s.proxy.Close()
	rest := s.inspectAll(c, fleetInspects/2)
	c.Assert(rest, check.DeepEquals, map[string]int{s.front.Host: fleetNodes * fleetInspects / 2},
		check.Commentf("with the proxy gone every inspect is served by the upstream"))
	for i, d := range s.nodes {
		log := d.Log()
		c.Check(strings.Count(log, "mirror failed; falling back"), check.Equals, 1,
			check.Commentf("node %d: one warning for the burst\n%s", i, logTail(d)))
		c.Check(strings.Contains(log, "level=warning"), check.Equals, true)
		c.Check(strings.Contains(log, s.up.Password), check.Equals, false, check.Commentf("node %d logged the password", i))
	}
}

func (s *FleetSuite) proxyLog() string {
	b, _ := os.ReadFile(s.proxy.LogPath)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// pullAll pulls both tags on every node of nodes at once.
func (s *FleetSuite) pullAll(c *check.C, nodes []*Daemon) {
	var wg sync.WaitGroup
	errs := make([]string, len(nodes))
	for i, d := range nodes {
		wg.Add(1)
		go func(i int, d *Daemon) {
			defer wg.Done()
			for _, repo := range []string{"fleet/app", "fleet/multi"} {
				_, lines := d.Pull(c, s.front.Host+"/"+repo, "1", s.userAuth())
				if lines == nil || lines.Err() != "" {
					errs[i] += fmt.Sprintf("%s: %v; ", repo, lines)
				}
			}
		}(i, d)
	}
	wg.Wait()
	for i, e := range errs {
		c.Assert(e, check.Equals, "", check.Commentf("pull on node %d", i))
	}
}
