package integration

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// failFirst answers the first n requests of kind with fail, then lets the
// registry answer.
func failFirst(kind hostile.Kind, n int64, fail func(w http.ResponseWriter, r *http.Request)) func(*testregistry.Image) hostile.Fault {
	return func(*testregistry.Image) hostile.Fault {
		var seen atomic.Int64
		return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
			if req.Kind != kind || seen.Add(1) > n {
				return false
			}
			fail(w, r)
			return true
		}
	}
}

func always(kind hostile.Kind, fail func(w http.ResponseWriter, r *http.Request)) func(*testregistry.Image) hostile.Fault {
	return failFirst(kind, 1<<62, fail)
}

func status(code int, retryAfter string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		hostile.WriteError(w, code, "TOOMANYREQUESTS", http.StatusText(code))
	}
}

// atMost checks the registry saw at most n requests of kind: retries are bounded.
func atMost(kind hostile.Kind, n int) func(c *check.C, r *hostile.Registry) {
	return func(c *check.C, r *hostile.Registry) {
		c.Check(r.Count(kind) <= n, check.Equals, true, check.Commentf("%d %s requests, want at most %d", r.Count(kind), kind, n))
	}
}

func (s *HostileNetworkSuite) TestRetriesAndBrokenConnections(c *check.C) {
	start := time.Now()
	s.run(c, []hcase{
		{name: "429 with Retry-After once, then served", fault: failFirst(hostile.KindManifest, 1, status(http.StatusTooManyRequests, "1")), remote: ok, pull: ok},
		{name: "503 burst of two, then served", fault: failFirst(hostile.KindManifest, 2, status(http.StatusServiceUnavailable, "")), remote: ok, pull: ok},
		{
			name: "429 for ever", fault: always(hostile.KindManifest, status(http.StatusTooManyRequests, "1")),
			remote: "unavailable", pull: "unavailable", check: atMost(hostile.KindManifest, 6),
		},
		{
			name: "503 for ever", fault: always(hostile.KindManifest, status(http.StatusServiceUnavailable, "")),
			remote: "unavailable", pull: "unavailable", check: atMost(hostile.KindManifest, 6),
		},
		{
			name: "503 for ever on a layer", fault: always(hostile.KindBlob, status(http.StatusServiceUnavailable, "")),
			pull: "unavailable",
		},
		{name: "reset once, then served", fault: failFirst(hostile.KindManifest, 1, func(w http.ResponseWriter, _ *http.Request) { hostile.Reset(w) }), remote: ok, pull: ok},
		{
			// 3 attempts each for the inspect and the pull, and one more: the
			// inspect's first GET goes on the connection of the scheme probe's
			// ping (registry/endpoints.go), and net/http replays a GET reset
			// on a reused connection once by itself.
			name: "reset for ever", fault: always(hostile.KindManifest, func(w http.ResponseWriter, _ *http.Request) { hostile.Reset(w) }),
			remote: "unavailable", pull: "unavailable", check: atMost(hostile.KindManifest, 7),
		},
		{
			name: "reset on every layer request", fault: always(hostile.KindBlob, func(w http.ResponseWriter, _ *http.Request) { hostile.Reset(w) }),
			pull: "unavailable",
		},
		{
			name: "manifest answer that never comes", fault: always(hostile.KindManifest, func(_ http.ResponseWriter, r *http.Request) { hostile.Hang(r) }),
			remote: "unavailable", pull: "unavailable", check: atMost(hostile.KindManifest, 6),
		},
	})
	c.Logf("network cases took %s", time.Since(start))
}

// TestTrickledBodies: a body that moves a byte every 100 ms (manifest,
// token response, layer) ends in the slow-body error, never a hang.
func (s *HostileTrickleSuite) TestTrickledBodies(c *check.C) {
	start := time.Now()
	s.run(c, []hcase{
		{
			name: "manifest trickled a byte every 100 ms",
			fault: func(img *testregistry.Image) hostile.Fault {
				return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
					if req.Kind != hostile.KindManifest || r.Method != http.MethodGet {
						return false
					}
					hostile.Trickle(w, r, img.Manifest.MediaType, img.Manifest.Data, 100*time.Millisecond)
					return true
				}
			},
			remote: "fewer than 1024 bytes received", pull: "fewer than 1024 bytes received",
		},
		{
			name: "token response trickled a byte every 100 ms", token: true,
			fault: func(*testregistry.Image) hostile.Fault {
				return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
					if req.Kind != hostile.KindToken {
						return false
					}
					hostile.Trickle(w, r, "application/json", []byte(`{"token":"`+hostile.TokenValue+`","expires_in":300}`), 100*time.Millisecond)
					return true
				}
			},
			remote: "fewer than 1024 bytes received", pull: "fewer than 1024 bytes received",
		},
		{
			name: "layer trickled a byte every 100 ms",
			fault: onBlob(layer, func(w http.ResponseWriter, r *http.Request, b testregistry.Blob) bool {
				hostile.Trickle(w, r, b.MediaType, b.Data, 100*time.Millisecond)
				return true
			}),
			pull: "fewer than 1024 bytes received",
		},
	})
	c.Logf("trickle cases took %s", time.Since(start))
}

// Cases where the registry must answer normally after the odd HEAD.
func (s *HostileRegistrySuite) TestHeadFallsBackToGet(c *check.C) {
	for _, tc := range []struct {
		name string
		head func(w http.ResponseWriter)
	}{
		{"405", func(w http.ResponseWriter) { w.WriteHeader(http.StatusMethodNotAllowed) }},
		{"no Docker-Content-Digest", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
			w.WriteHeader(http.StatusOK)
		}},
	} {
		s.runOne(c, hcase{
			name: "HEAD " + tc.name,
			fault: func(*testregistry.Image) hostile.Fault {
				return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
					if req.Kind == hostile.KindManifest && r.Method == http.MethodHead {
						tc.head(w)
						return true
					}
					return false
				}
			},
			remote: ok, pull: ok,
			check: func(c *check.C, r *hostile.Registry) {
				gets := 0
				for _, s := range r.Seen() {
					if s.Method == http.MethodGet && hostile.Classify(s.Path).Kind == hostile.KindManifest {
						gets++
					}
				}
				c.Check(gets > 0, check.Equals, true, check.Commentf("no manifest GET after HEAD %s", tc.name))
			},
		})
	}
}

// Raw TCP servers: one that accepts and never says a word, one that resets
// every connection. Both end in an error naming the host within the
// (shortened) timeouts and bounded retries.
func (s *HostileNetworkSuite) TestSilentAndResettingServers(c *check.C) {
	for _, mk := range []struct {
		name  string
		start func() (*hostile.TCP, error)
	}{{"silent", hostile.Silent}, {"resetting", hostile.Resetter}} {
		srv, err := mk.start()
		c.Assert(err, check.IsNil)
		name := srv.Host + "/hostile/app"
		before := s.d.storeState(c)
		r := s.d.remoteInspect(c, name+":1.0", "")
		c.Check(r.Status >= 500, check.Equals, true, check.Commentf("%s: %s", mk.name, r))
		c.Check(strings.Contains(r.Message(), srv.Host), check.Equals, true, check.Commentf("%s: %s", mk.name, r.Message()))
		c.Check(strings.Contains(r.Message(), "unavailable"), check.Equals, true, check.Commentf("%s: %s", mk.name, r.Message()))
		// A bounded number of tries (connections, counted below), each
		// ended by wharfd's header timeout: the silent server closes none,
		// so every one it accepted was given up by wharfd.
		if mk.name == "silent" {
			accepted := srv.Accepted.Load()
			gaveUp := waitFor(daemonStopTimeout, func() bool { return srv.Abandoned.Load() >= accepted })
			c.Check(gaveUp, check.Equals, true, check.Commentf("silent: wharfd closed %d of the %d connections it opened", srv.Abandoned.Load(), accepted))
		}
		msg := s.d.pullMessage(c, name, "1.0", "")
		c.Check(strings.Contains(msg, srv.Host) && strings.Contains(msg, "unavailable"), check.Equals, true, check.Commentf("%s pull: %s", mk.name, msg))
		c.Check(s.d.storeState(c), check.DeepEquals, before)
		c.Check(srv.Accepted.Load() <= 6, check.Equals, true, check.Commentf("%s: %d connections", mk.name, srv.Accepted.Load()))
		c.Logf("%s: %s (%d connections)", mk.name, r.Message(), srv.Accepted.Load())
		srv.Close()
		s.d.ping(c)
	}
}

// A registry whose tag list always has a next page: pull -a stops after a
// bounded number of pages.
func (s *HostileRegistrySuite) TestEndlessTagPagination(c *check.C) {
	s.runOne(c, hcase{
		name: "endless tag pagination",
		fault: func(*testregistry.Image) hostile.Fault {
			var n atomic.Int64
			return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
				if req.Kind != hostile.KindTags {
					return false
				}
				i := n.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/list?n=1&last=t%d>; rel="next"`, req.Repo, i))
				fmt.Fprintf(w, `{"name":%q,"tags":["t%d"]}`, req.Repo, i)
				return true
			}
		},
		check: func(c *check.C, r *hostile.Registry) {
			d := s.d
			before := d.storeState(c)
			msg := d.pullMessage(c, r.Name(), "", "")
			c.Check(strings.Contains(msg, r.Host) && strings.Contains(msg, "exceeded"), check.Equals, true, check.Commentf("pull -a: %s", msg))
			c.Check(r.Count(hostile.KindTags) <= 1000, check.Equals, true, check.Commentf("%d tag pages", r.Count(hostile.KindTags)))
			c.Check(d.storeState(c), check.DeepEquals, before)
			c.Logf("endless tags: %s after %d pages", msg, r.Count(hostile.KindTags))
		},
	})
}
