//go:build bench

package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// Case 8: a fleet behind a shared pull-through cache (docs/deploy.md).
// Three wharfd, 20 remote inspects each, all at once, alternating two tags
// of a token-auth upstream at the bench RTT; once straight to the upstream
// (the baseline), once through the CNCF registry in proxy mode on this
// machine (RTT 0, redis blob-descriptor cache when redis-server is
// installed), each node pointed at it by a hosts.toml. The figure is what
// the upstream saw — all its requests, and the manifest GETs a pull limit
// counts — and the inspects' latency. Two tags: 3 manifests (an image; an
// index and its platform's manifest) and 3 configs.
//
//	wharfd ×3 ─► proxy ─► rttProxy(RTT) ─► Front ─► registry (+ token server)
//	wharfd ×3 ──────────► rttProxy(RTT) ─► Front ─► …            (baseline)

const (
	fleetBenchNodes    = 3
	fleetBenchInspects = 20
)

type fleetEnv struct {
	front *testregistry.Front
	up    *testregistry.Registry
	rtt   *rttProxy
	proxy *testregistry.Registry
	redis *testregistry.Redis
	host  string // the upstream as names use it: the RTT proxy
	auth  string // X-Registry-Auth for host
	names []string
}

func newFleetEnv(ctx context.Context, rtt time.Duration) (*fleetEnv, error) {
	e := &fleetEnv{}
	ok := false
	defer func() {
		if !ok {
			e.close()
		}
	}()
	var err error
	if e.rtt, err = newRTTProxy(rtt, false); err != nil {
		return nil, err
	}
	e.host = e.rtt.Addr()
	e.front = testregistry.NewFront()
	// The realm on the upstream's own host: the proxy sends its
	// credentials only there (distribution's realmAllowed).
	if e.up, err = testregistry.Start(testregistry.Options{Auth: testregistry.AuthToken, TokenRealm: "http://" + e.host + "/token"}); err != nil {
		return nil, err
	}
	if err := e.front.Route(e.up.URL, e.up.TokenCounter.URL); err != nil {
		return nil, err
	}
	e.rtt.setTarget(e.front.Host)
	b, _ := json.Marshal(map[string]string{"username": e.up.Username, "password": e.up.Password, "serveraddress": e.host})
	e.auth = base64.URLEncoding.EncodeToString(b)

	c := e.up.Client()
	c.HTTP = &http.Client{Timeout: 5 * time.Minute}
	img, err := testregistry.NewImage(testregistry.ImageOptions{Layers: 2})
	if err != nil {
		return nil, err
	}
	if err := c.PushImage(ctx, "fleet/app", "1", img); err != nil {
		return nil, err
	}
	ix, err := testregistry.NewIndex(testregistry.IndexOptions{})
	if err != nil {
		return nil, err
	}
	if err := c.PushIndex(ctx, "fleet/multi", "1", ix); err != nil {
		return nil, err
	}
	e.names = []string{e.host + "/fleet/app:1", e.host + "/fleet/multi:1"}

	opts := testregistry.Options{ProxyRemoteURL: "http://" + e.host, ProxyUsername: e.up.Username, ProxyPassword: e.up.Password, ProxyTTL: time.Hour}
	dir, err := os.MkdirTemp("", "wharf-bench-redis-")
	if err != nil {
		return nil, err
	}
	e.redis, err = testregistry.StartRedis(dir)
	switch {
	case errors.Is(err, testregistry.ErrNoRedis):
		fmt.Fprintf(os.Stderr, "case 8: %v: the proxy runs with its in-memory cache\n", err)
	case err != nil:
		return nil, err
	default:
		opts.Redis = e.redis.Addr
	}
	if e.proxy, err = testregistry.Start(opts); err != nil {
		return nil, err
	}
	ok = true
	return e, nil
}

func (e *fleetEnv) close() {
	for _, r := range []*testregistry.Registry{e.proxy, e.up} {
		if r != nil {
			r.Close()
		}
	}
	if e.redis != nil {
		e.redis.Close()
	}
	if e.front != nil {
		e.front.Close()
	}
	if e.rtt != nil {
		e.rtt.Close()
	}
}

// round starts three fresh wharfd (through the proxy when viaProxy), runs
// 20 inspects on each at once, and returns the latencies and what the
// upstream saw.
// upstreamGets are the upstream's GETs of manifests (what Docker Hub's
// pull limit counts) and blobs (its bandwidth).
type upstreamGets struct{ manifests, blobs int }

func (e *fleetEnv) round(ctx context.Context, bin string, viaProxy bool) ([]time.Duration, counts, upstreamGets, error) {
	var nodes []*wharfd
	var roots []string
	defer func() {
		for i, d := range nodes {
			dropDaemon(d, roots[i])
		}
	}()
	for i := 0; i < fleetBenchNodes; i++ {
		root, err := os.MkdirTemp("", "wharf-bench-fleet-")
		if err != nil {
			return nil, counts{}, upstreamGets{}, err
		}
		certs := filepath.Join(root, "certs.d")
		if viaProxy {
			dir := filepath.Join(certs, e.host)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, counts{}, upstreamGets{}, err
			}
			toml := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+e.host, "http://"+e.proxy.Host)
			if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(toml), 0o600); err != nil {
				return nil, counts{}, upstreamGets{}, err
			}
		}
		d, err := startWharfd(bin, filepath.Join(root, "data"), "--certs-dir", certs)
		if err != nil {
			return nil, counts{}, upstreamGets{}, err
		}
		nodes, roots = append(nodes, d), append(roots, root)
	}
	e.up.ResetCounters()
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	for _, d := range nodes {
		wg.Add(1)
		go func(d *wharfd) {
			defer wg.Done()
			for i := 0; i < fleetBenchInspects; i++ {
				name := e.names[i%len(e.names)]
				start := time.Now()
				status, body, err := d.do(ctx, http.MethodGet, "/v1.50/images/"+name+"/json?remote=1", map[string]string{"X-Registry-Auth": e.auth}, nil)
				el := time.Since(start)
				if err == nil && status != http.StatusOK {
					err = fmt.Errorf("remote inspect %s: %d %s", name, status, body)
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lat = append(lat, el)
				mu.Unlock()
			}
		}(d)
	}
	wg.Wait()
	gets := upstreamGets{manifests: e.up.Counter.Count("GET manifests"), blobs: e.up.Counter.Count("GET blobs")}
	return lat, counts{reg: e.up.Counter.Total(), tok: e.up.TokenCounter.Total()}, gets, firstErr
}

func caseFleet(ctx context.Context, bin string, rtt time.Duration) ([]row, error) {
	e, err := newFleetEnv(ctx, rtt)
	if err != nil {
		return nil, err
	}
	defer e.close()
	direct, dc, dg, err := e.round(ctx, bin, false)
	if err != nil {
		return nil, fmt.Errorf("direct: %w", err)
	}
	// A cold proxy with the whole fleet at once, then three new nodes
	// (CI runners coming up) against the proxy that now holds the images.
	cold, cc, cg, err := e.round(ctx, bin, true)
	if err != nil {
		return nil, fmt.Errorf("through the cold proxy: %w", err)
	}
	warm, wc, wg, err := e.round(ctx, bin, true)
	if err != nil {
		return nil, fmt.Errorf("through the warm proxy: %w", err)
	}
	n := fleetBenchNodes * fleetBenchInspects
	cache := "in-memory cache"
	if e.redis != nil {
		cache = "redis cache"
	}
	dmed, _ := stats(direct)
	mk := func(name string, lat []time.Duration, c counts, g upstreamGets, baseline bool) row {
		med, p95 := stats(lat)
		r := row{Case: "8", Name: name, Reqs: fmt.Sprintf("%d/%d", c.reg, c.tok), Median: ms(med), P95: ms(p95), Unit: "ms", N: n,
			Note: fmt.Sprintf("upstream: %d manifest GETs (what Docker Hub's pull limit counts), %d blob GETs, %d requests in all (registry/token %d/%d)", g.manifests, g.blobs, c.total(), c.reg, c.tok)}
		if baseline {
			r.Baseline, r.BaseName, r.Ratio = ms(dmed), "direct", ms(med)/ms(dmed)
		}
		return r
	}
	nodes := fmt.Sprintf("%d new wharfd × %d remote inspects", fleetBenchNodes, fleetBenchInspects)
	return []row{
		mk(nodes+fmt.Sprintf(", direct (RTT %.0fms)", ms(rtt)), direct, dc, dg, false),
		mk(nodes+" through a cold proxy ("+cache+")", cold, cc, cg, true),
		mk(nodes+" through the warm proxy", warm, wc, wg, true),
		{Case: "8", Name: "upstream manifest GETs, new nodes, warm proxy", Unit: "requests", N: 1,
			Median: float64(wg.manifests), Baseline: float64(dg.manifests), BaseName: "direct", Ratio: float64(wg.manifests) / float64(max(dg.manifests, 1)),
			Target: "0", Pass: pass(wg.manifests == 0 && wg.blobs == 0),
			Note: fmt.Sprintf("a cold proxy fetched %d manifests and %d blobs: distribution's proxy does not coalesce misses that arrive together", cg.manifests, cg.blobs)},
	}, nil
}
