package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// LoadSuite runs hundreds of concurrent clients against one wharfd while a
// proxy in front of a real registry breaks a share of the requests.
type LoadSuite struct {
	suiteFixture
	reg   *testregistry.Registry
	proxy *hostile.FaultProxy
	d     *Daemon
}

func TestLoadSuite(t *testing.T) { t.Parallel(); runSuite(t, &LoadSuite{}) }

// Load shape: 200 clients over 8 images; one registry request in 7 fails
// (503 or reset), which the bounded retries mostly absorb.
const (
	loadClients   = 200
	loadImages    = 8
	loadFaultRate = 7
	// loadMaxHWMKiB bounds wharfd's peak resident memory under the load:
	// the caches are capped (manifests and configs 32 MiB) and layers
	// stream to disk.
	loadMaxHWMKiB = 300 << 10
)

func (s *LoadSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
	var err error
	s.proxy, err = hostile.NewFaultProxy(s.reg.DirectURL, loadFaultRate)
	c.Assert(err, check.IsNil)
	s.closeAtEnd(s.proxy.Close)
	s.d = s.startDaemon(c)
}

// loadResult is one client's outcome.
type loadResult struct {
	op, ref string
	status  int
	err     string // transport error or the error the client was given
}

// loadClient is one shared HTTP client on the unix socket, so its idle
// connections can be closed before counting wharfd's goroutines.
func loadClient(d *Daemon) *http.Client {
	sock := d.Sock
	return &http.Client{
		Timeout: 3 * time.Minute,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var dl net.Dialer
				return dl.DialContext(ctx, "unix", sock)
			},
			MaxIdleConnsPerHost: loadClients,
		},
	}
}

func doLoad(cl *http.Client, op, ref string) loadResult {
	res := loadResult{op: op, ref: ref}
	var req *http.Request
	switch op {
	case "remote":
		req, _ = http.NewRequest(http.MethodGet, "http://wharfd/v1.50/images/"+ref+"/json?remote=1", nil)
	case "local":
		req, _ = http.NewRequest(http.MethodGet, "http://wharfd/v1.50/images/"+ref+"/json", nil)
	case "pull":
		name, tag, _ := strings.Cut(ref[strings.LastIndex(ref, "/"):], ":")
		name = ref[:strings.LastIndex(ref, "/")] + name
		req, _ = http.NewRequest(http.MethodPost, "http://wharfd/v1.50/images/create?"+url.Values{"fromImage": {name}, "tag": {tag}}.Encode(), nil)
	}
	resp, err := cl.Do(req)
	if err != nil {
		res.err = "transport: " + err.Error()
		return res
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	res.status = resp.StatusCode
	if err != nil {
		res.err = "read: " + err.Error()
		return res
	}
	if resp.StatusCode != http.StatusOK {
		var m struct{ Message string }
		_ = json.Unmarshal(body, &m)
		res.err = m.Message
		if res.err == "" {
			res.err = "no message: " + string(body)
		}
		return res
	}
	if op == "pull" {
		for _, line := range bytes.Split(body, []byte("\n")) {
			var m struct {
				Error       string
				ErrorDetail struct{ Message string }
			}
			if json.Unmarshal(line, &m) == nil && m.Error != "" {
				res.err = m.Error
				res.status = 0
			}
		}
	}
	return res
}

func (s *LoadSuite) TestConcurrentClientsUnderInjectedFaults(c *check.C) {
	d := s.d
	locals := []string{"load/local:1", "load/local:2"}
	for _, l := range locals {
		d.Import(c, l)
	}

	cl := loadClient(d)
	// Warm up once, then take the baseline with no client connection open.
	_ = doLoad(cl, "local", locals[0])
	cl.CloseIdleConnections()
	// The harness's d.Get opens a fresh connection per call and leaves it
	// idle, which wharfd counts; measure through a client without keep-alive.
	probe := loadClient(d)
	probe.Transport.(*http.Transport).DisableKeepAlives = true
	goroutines := func() int {
		resp, err := probe.Get("http://wharfd/v1.50/info")
		c.Assert(err, check.IsNil)
		defer resp.Body.Close()
		var info struct{ NGoroutines int }
		c.Assert(json.NewDecoder(resp.Body).Decode(&info), check.IsNil)
		return info.NGoroutines
	}
	baseG := goroutines()
	baseFD := fdCount(c, d.pid())

	for round, every := range []int{loadFaultRate, 2} {
		s.proxy.SetEvery(every)
		s.loadRound(c, cl, probe, round, every, locals)
	}

	// Back to the baseline: with the clients' and the registry's idle
	// connections closed, wharfd's goroutines and descriptors return to
	// what they were (a little slack for the runtime's own).
	cl.CloseIdleConnections()
	s.proxy.CloseClientConnections()
	var g, fds int
	back := waitFor(30*time.Second, func() bool {
		g = goroutines()
		fds = fdCount(c, d.pid())
		return g <= baseG+5 && fds <= baseFD+3
	})
	c.Check(back, check.Equals, true, check.Commentf("goroutines %d (baseline %d), fds %d (baseline %d)", g, baseG, fds, baseFD))
	hwm := procStatus(c, d.pid(), "VmHWM")
	c.Logf("baseline goroutines %d fds %d; after %d %d; VmHWM %d KiB", baseG, baseFD, g, fds, hwm)
	c.Check(hwm < loadMaxHWMKiB, check.Equals, true, check.Commentf("VmHWM %d KiB", hwm))
	d.ping(c)
	// The pulls the faults broke left no blob behind: blobs/ holds what the
	// images use and the check (GET /wharf/system/check) counts no
	// unreferenced blob.
	c.Check(orphanReport(c, d, gcTimeout), check.Equals, "", check.Commentf("orphan blobs after the load"))
}

// loadRound pushes fresh images (so caches do not answer for the registry)
// and runs loadClients clients at once: 40% remote inspects, 30% pulls of
// overlapping images, 30% local inspects.
func (s *LoadSuite) loadRound(c *check.C, cl, probe *http.Client, round, every int, locals []string) {
	host := s.proxy.Host
	var refs []string
	for i := 0; i < loadImages; i++ {
		repo := fmt.Sprintf("load/r%d-img%d", round, i%3) // images share repositories
		tag := fmt.Sprintf("v%d", i)
		pushImage(c, s.reg, repo, tag, testregistry.ImageOptions{Layers: 2, LayerSize: 32 << 10})
		refs = append(refs, host+"/"+repo+":"+tag)
	}
	injected := s.proxy.Injected.Load()
	start := time.Now()
	results := make(chan loadResult, loadClients)
	var wg sync.WaitGroup
	for i := 0; i < loadClients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			switch i % 10 {
			case 0, 1, 2, 3:
				results <- doLoad(cl, "remote", refs[i%len(refs)])
			case 4, 5, 6:
				results <- doLoad(cl, "pull", refs[(i*3)%len(refs)])
			default:
				results <- doLoad(cl, "local", locals[i%len(locals)])
			}
		}(i)
	}
	wg.Wait()
	close(results)
	took := time.Since(start)

	counts := map[string]int{}
	for r := range results {
		if r.err == "" && r.status == http.StatusOK {
			counts[r.op+" ok"]++
			continue
		}
		counts[r.op+" failed"]++
		// A failure must be an error the client can read: it names the
		// registry and says it is unavailable (the injected faults) — never a
		// transport error, an empty message or an internal one.
		c.Check(r.op != "local", check.Equals, true, check.Commentf("local inspect %s failed under load: %d %s", r.ref, r.status, r.err))
		c.Check(strings.Contains(r.err, host) && strings.Contains(r.err, "unavailable"), check.Equals, true,
			check.Commentf("%s %s: %d %q", r.op, r.ref, r.status, r.err))
	}
	c.Logf("round %d (1 fault in %d): %d clients in %s: %v; registry requests %d, injected faults %d",
		round, every, loadClients, took, counts, s.proxy.Requests.Load(), s.proxy.Injected.Load()-injected)
	c.Check(s.proxy.Injected.Load() > injected, check.Equals, true)
	c.Check(counts["remote ok"] > 0 && counts["pull ok"] > 0, check.Equals, true, check.Commentf("%v", counts))

	// Every image that was pulled is whole: a local inspect answers.
	for _, ref := range refs {
		r := doLoad(probe, "local", ref)
		c.Check(r.status == http.StatusOK || r.status == http.StatusNotFound, check.Equals, true, check.Commentf("%s: %+v", ref, r))
	}

}
