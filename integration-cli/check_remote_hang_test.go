package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// CheckRemoteHangSuite is issue 20's red team finding 4: a registry that
// answers once and then hangs stalled the whole update check. With 20
// tags on such a host and 8 workers shared by every registry, the hanging
// host took all 8 and a healthy registry's answers waited behind its
// timeouts (19 s instead of under 1 s with --registry-timeout 6s), and
// only the host's first tag could mark it down, so every tag cost a
// timeout. Each registry now has its own share of the workers, and any
// unavailable answer marks its host down.
type CheckRemoteHangSuite struct {
	suiteFixture
	d       *Daemon
	healthy *testregistry.Registry
	front   *hostile.HookProxy // in front of healthy
	hang    *hostile.Registry

	checking   atomic.Bool  // the check runs: the faults below apply
	answered   atomic.Bool  // the hanging host answered its one request
	held       atomic.Int32 // requests the hanging host holds
	firstHeld  atomic.Bool  // the healthy registry's first HEAD was held
	enoughOnce sync.Once
	enough     chan struct{} // closed when the hanging host holds hangEnough
}

func TestCheckRemoteHangSuite(t *testing.T) { t.Parallel(); runSuite(t, &CheckRemoteHangSuite{}) }

const (
	hangTags    = 20
	healthyTags = 5
	// hangEnough: the healthy registry's first HEAD is held until the
	// hanging host holds this many requests, so that before the fix its
	// hangs had every shared worker (the rest queued ahead of the healthy
	// registry's: Go's channel senders are served in order) — not left to
	// chance. 3 is within any fair share of 8 workers between 2
	// registries.
	hangEnough = 3
)

func (s *CheckRemoteHangSuite) SetUpSuite(c *check.C) {
	s.enough = make(chan struct{})
	s.healthy = s.startRegistry(c, testregistry.Options{})
	front, err := hostile.NewHookProxy(s.healthy.DirectURL, func(w http.ResponseWriter, r *http.Request) bool {
		if s.checking.Load() && r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/") && s.firstHeld.CompareAndSwap(false, true) {
			select {
			case <-s.enough:
			case <-r.Context().Done():
			}
		}
		return false
	}, nil)
	c.Assert(err, check.IsNil)
	s.front = front
	s.closeAtEnd(front.Close)

	s.hang, err = hostile.Start(hostile.Options{Fault: func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
		if !s.checking.Load() || req.Kind != hostile.KindManifest || s.answered.CompareAndSwap(false, true) {
			return false
		}
		if s.held.Add(1) >= hangEnough {
			s.enoughOnce.Do(func() { close(s.enough) })
		}
		hostile.Hang(r)
		return true
	}})
	c.Assert(err, check.IsNil)
	s.closeAtEnd(s.hang.Close)

	s.d = s.startDaemon(c, "--registry-timeout", "6s")
	img := pushImage(c, s.healthy, "ok/app", "t0", testregistry.ImageOptions{})
	ctx, cancel := fixtureCtx()
	defer cancel()
	for i := 1; i < healthyTags; i++ {
		c.Assert(s.healthy.Client().PutManifest(ctx, "ok/app", fmt.Sprintf("t%d", i), img.Manifest), check.IsNil)
	}
	for i := range healthyTags {
		r, lines := s.d.Pull(c, s.front.Host+"/ok/app", fmt.Sprintf("t%d", i), "")
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
		c.Assert(lines.Err(), check.Equals, "")
	}
	src := s.hang.Host + "/" + s.hang.Repo
	r, lines := s.d.Pull(c, src, s.hang.Tag, "")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Assert(lines.Err(), check.Equals, "")
	for i := 1; i < hangTags; i++ {
		s.d.WharfOK(c, "tag", src+":"+s.hang.Tag, fmt.Sprintf("%s:t%02d", src, i))
	}
}

// checkLine is one line of the check's stream, with when it arrived.
type checkLine struct {
	Repository, Tag, RemoteStatus, RemoteError string
	at                                         time.Duration
}

// TestCheckRemoteHealthyRegistryDoesNotWaitForAHangingOne: every answer of
// the healthy registry arrives before the hanging host's first timeout
// could fire (ordering in the stream, no clock), and after the hanging
// host's first unavailable answer its other tags are not asked.
func (s *CheckRemoteHangSuite) TestCheckRemoteHealthyRegistryDoesNotWaitForAHangingOne(c *check.C) {
	s.checking.Store(true)
	defer s.checking.Store(false)
	start := time.Now()
	req, err := http.NewRequest(http.MethodPost, "http://wharfd/v1.50/wharf/images/check-remote", nil)
	c.Assert(err, check.IsNil)
	resp, err := s.d.HTTPClient().Do(req)
	c.Assert(err, check.IsNil)
	defer resp.Body.Close()
	c.Assert(resp.StatusCode, check.Equals, http.StatusOK)
	var got []checkLine
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l checkLine
		c.Assert(json.Unmarshal(sc.Bytes(), &l), check.IsNil, check.Commentf("%s", sc.Bytes()))
		l.at = time.Since(start)
		got = append(got, l)
	}
	c.Assert(sc.Err(), check.IsNil)
	c.Assert(got, check.HasLen, healthyTags+hangTags, check.Commentf("%s", summarizeCheckLines(got)))

	var healthyDone, firstHangErr time.Duration
	lastHealthy, firstErr, notAsked := -1, -1, 0
	for i, l := range got {
		switch {
		case strings.HasPrefix(l.Repository, s.front.Host+"/"):
			c.Check(l.RemoteStatus, check.Equals, "current", check.Commentf("%+v", l))
			lastHealthy, healthyDone = i, l.at
		case l.RemoteStatus == "error":
			if firstErr < 0 {
				firstErr, firstHangErr = i, l.at
			}
			if strings.HasPrefix(l.RemoteError, "not asked: ") {
				notAsked++
			}
		}
	}
	c.Logf("healthy registry's %d answers by %s; the hanging host's first error at %s; %d of its %d tags not asked; the check took %s",
		healthyTags, healthyDone, firstHangErr, notAsked, hangTags, time.Since(start))
	c.Assert(firstErr >= 0, check.Equals, true, check.Commentf("the hanging host answered no error:\n%s", summarizeCheckLines(got)))
	c.Check(lastHealthy < firstErr, check.Equals, true,
		check.Commentf("a healthy answer (line %d) came after the hanging host's first timeout (line %d):\n%s", lastHealthy, firstErr, summarizeCheckLines(got)))
	// Down after its first unavailable answer: at most the 8 workers'
	// requests in flight then were asked, besides the one answered.
	c.Check(notAsked >= hangTags-1-8, check.Equals, true, check.Commentf("%d tags not asked:\n%s", notAsked, summarizeCheckLines(got)))
}

// summarizeCheckLines is one short line per answer, for failure messages.
func summarizeCheckLines(ls []checkLine) string {
	var b strings.Builder
	for i, l := range ls {
		e := l.RemoteError
		if len(e) > 40 {
			e = e[:40] + "…"
		}
		fmt.Fprintf(&b, "%2d %8s %s:%s %s %s\n", i, l.at.Round(time.Millisecond), l.Repository, l.Tag, l.RemoteStatus, e)
	}
	return b.String()
}
