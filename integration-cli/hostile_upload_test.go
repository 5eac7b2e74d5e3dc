package integration

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// pushTimeout bounds a push that the registry stalls: with the suite's
// 2 s window the stall is met within a few windows once the socket
// buffers (a few MiB on loopback) are full; a push without a write-side
// rule never ends, and this is what makes the test fail then.
const pushTimeout = 90 * time.Second

// pushMessage pushes name:tag and returns the error the client sees ("" on
// success), within pushTimeout.
func (d *Daemon) pushMessage(c *check.C, name, tag string) string {
	ctx, cancel := context.WithTimeout(context.Background(), pushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://wharfd/v1.50/images/"+name+"/push?tag="+url.QueryEscape(tag), nil)
	c.Assert(err, check.IsNil)
	req.Header.Set("X-Registry-Auth", "e30=") // {}
	cl := d.HTTPClient()
	cl.Transport.(*http.Transport).DisableKeepAlives = true
	resp, err := cl.Do(req)
	c.Assert(err, check.IsNil, check.Commentf("push %s:%s", name, tag))
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	c.Assert(err, check.IsNil, check.Commentf("push %s:%s: no end within %s", name, tag, pushTimeout))
	r := Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	if r.Status != http.StatusOK {
		return r.String()
	}
	return r.Lines(c).Err()
}

// A registry that accepts an upload and then stops reading it: the push
// ends with an error naming the registry within a few windows of the
// slow-body rule (1 KiB per window, here 2 s), instead of hanging forever.
// The layer (32 MiB of random bytes) is larger than the loopback socket
// buffers, so the sender really blocks.
func (s *HostileRegistrySuite) TestPushToARegistryThatStopsReadingFails(c *check.C) {
	img, err := testregistry.NewImage(testregistry.ImageOptions{LayerSize: 32 << 20})
	c.Assert(err, check.IsNil)
	const dst = "hostile/pushed"
	// The image's config (≤ 1 MiB) goes up whole in one PUT; its 32 MiB
	// layer streams in PATCHes. Both stall here, each counted apart.
	var puts, patches atomic.Int64
	// stop ends the stalled handlers when the test is over: a handler that
	// never reads the body never sees its client leave.
	stop := make(chan struct{})
	reg, err := hostile.Start(hostile.Options{Image: img, Fault: func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
		if req.Repo != dst || req.Kind != hostile.KindBlob || !strings.HasPrefix(req.Ref, "uploads") {
			return false
		}
		switch r.Method {
		case http.MethodPost: // start an upload (and refuse any mount)
			w.Header().Set("Location", "/v2/"+dst+"/blobs/uploads/session-1")
			w.WriteHeader(http.StatusAccepted)
		case http.MethodPut, http.MethodPatch: // take the headers, never read the body
			if r.Method == http.MethodPut {
				puts.Add(1)
			} else {
				patches.Add(1)
			}
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		default:
			hostile.WriteError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", r.Method)
		}
		return true
	}})
	c.Assert(err, check.IsNil)
	defer reg.Close()
	defer close(stop)
	d := s.d
	c.Assert(d.pullMessage(c, reg.Name(), reg.Tag, ""), check.Equals, "")
	r := d.oneShot(c, http.MethodPost, "/v1.50/images/"+reg.Ref()+"/tag?repo="+url.QueryEscape(reg.Host+"/"+dst)+"&tag=1")
	c.Assert(r.Status, check.Equals, http.StatusCreated, check.Commentf("%s", r))

	t0 := time.Now()
	msg := d.pushMessage(c, reg.Host+"/"+dst, "1")
	took := time.Since(t0)
	c.Logf("push: %s (after %s, %d PUT, %d PATCH)", msg, took, puts.Load(), patches.Load())
	c.Check(patches.Load() >= 1, check.Equals, true, check.Commentf("the upload never started: %v", reg.Seen()))
	c.Check(msg, check.Matches, ".*registry "+regexpQuote(reg.Host)+" is unavailable: .*stopped reading.*", check.Commentf("%s\n%s", msg, logTail(d)))
	// Counted, not timed: each request ends at its first 2 s window with
	// nothing taken (the message says so). The layer's session gives up
	// after 3 PATCHes that move nothing (maxStalledPatches), started over
	// at most once (upload.MaxRestarts); the config's whole PUT is tried
	// 3 times (the transport's retryAttempts + 1), in at most two
	// sessions. How many of those run before the layer's failure ends the
	// push depends on the machine's load, so each kind has its own bound.
	c.Check(patches.Load() <= 2*3, check.Equals, true, check.Commentf("%d PATCH requests to a registry that stopped reading", patches.Load()))
	c.Check(puts.Load() <= 2*3, check.Equals, true, check.Commentf("%d PUT requests to a registry that stopped reading", puts.Load()))

	for _, ref := range []string{reg.Host + "/" + dst + ":1", reg.Ref()} {
		r := d.oneShot(c, http.MethodDelete, "/v1.50/images/"+ref)
		c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("rmi %s: %s", ref, r))
	}
	d.ping(c)
}

// A registry whose upload session's Location is a URL with a scheme and
// no host ("http:/v2/…"): the push is refused with an error naming the
// Location and the registry, and nothing is sent anywhere with it (every
// reader of a Location, the POST's, a PATCH's, a status GET's, applies the
// same rule).
func (s *HostileRegistrySuite) TestPushRefusesAHostlessUploadLocation(c *check.C) {
	img, err := testregistry.NewImage(testregistry.ImageOptions{LayerSize: 4 << 10})
	c.Assert(err, check.IsNil)
	const dst = "hostile/hostless"
	var sessions atomic.Int64
	reg, err := hostile.Start(hostile.Options{Image: img, Fault: func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
		if req.Repo != dst || req.Kind != hostile.KindBlob || !strings.HasPrefix(req.Ref, "uploads") {
			return false
		}
		if r.Method == http.MethodPost {
			w.Header().Set("Location", "http:/v2/"+dst+"/blobs/uploads/session-1")
			w.WriteHeader(http.StatusAccepted)
			return true
		}
		sessions.Add(1) // a PATCH, PUT or GET in a session: it must never come
		hostile.WriteError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", r.Method)
		return true
	}})
	c.Assert(err, check.IsNil)
	defer reg.Close()
	d := s.d
	c.Assert(d.pullMessage(c, reg.Name(), reg.Tag, ""), check.Equals, "")
	r := d.oneShot(c, http.MethodPost, "/v1.50/images/"+reg.Ref()+"/tag?repo="+url.QueryEscape(reg.Host+"/"+dst)+"&tag=1")
	c.Assert(r.Status, check.Equals, http.StatusCreated, check.Commentf("%s", r))

	msg := d.pushMessage(c, reg.Host+"/"+dst, "1")
	c.Logf("push: %s", msg)
	c.Check(msg, check.Matches, `.*`+regexpQuote(reg.Host)+`.*bad Location "http:/v2/`+dst+`/blobs/uploads/session-1".*`, check.Commentf("%s\n%s", msg, logTail(d)))
	c.Check(sessions.Load(), check.Equals, int64(0))

	for _, ref := range []string{reg.Host + "/" + dst + ":1", reg.Ref()} {
		r := d.oneShot(c, http.MethodDelete, "/v1.50/images/"+ref)
		c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("rmi %s: %s", ref, r))
	}
	d.ping(c)
}
