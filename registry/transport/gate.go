package transport

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// hostGates back a host off once for every request waiting on it. A 429 or
// 503 with Retry-After closes the host's gate until then (capped at
// maxWait): requests to the host wait at the gate instead of each sleeping
// and retrying on its own, so that 64 concurrent inspects send the registry
// one request during the back-off, not 64 (regclient keeps the same per-host
// state). When the time is up, one request probes; the others wait for its
// answer. Another Retry-After closes the gate again, and every waiter counts
// it as an answer of its own (a retry spent: waiting is bounded by the
// retry policy, not by the registry); anything else opens it.
//
// A caller whose deadline ends before the gate opens is not made to wait
// for nothing: it fails at once with a BackoffError saying when the limit
// resets.
type hostGates struct {
	maxWait time.Duration

	mu    sync.Mutex
	gates *simplelru.LRU[string, *gate] // lower-case host[:port] → its gate
}

// gate is one host's back-off; its fields are under hostGates.mu.
type gate struct {
	host    string
	until   time.Time // closed until then (zero: open)
	resets  time.Time // when the registry said the limit resets (uncapped)
	probing bool      // the gate's time is up and one request is asking
	closed  int       // how many times the gate was closed
	changed chan struct{}
}

// maxResetHorizon bounds the reset time an error reports: a Retry-After of
// years is a registry's mistake, not a time to print.
const maxResetHorizon = 24 * time.Hour

func newHostGates(maxWait time.Duration) *hostGates {
	return &hostGates{maxWait: maxWait, gates: mustLRU[string, *gate](maxRememberedHosts)}
}

// ticket is a request's passage through its host's gate.
type ticket struct {
	g      *gate // nil: the host has never been backed off
	probe  bool  // this request asks on behalf of those waiting
	waited int   // closings of the gate while it waited: answers it shares
}

// BackoffError is a request that did not wait for its host's back-off: its
// deadline ends before the gate opens, or it waited through as many
// back-offs as it has retries. Classified Unavailable (classify.go).
type BackoffError struct {
	Host     string
	Resets   time.Time // when the registry said the limit resets
	Deadline bool      // the caller's deadline ends before the gate opens
}

func (e *BackoffError) Error() string {
	at := e.Resets.UTC().Format(time.RFC3339)
	if e.Deadline {
		return fmt.Sprintf("rate limited (429/503 with Retry-After): the limit resets at %s, after this operation's deadline", at)
	}
	return fmt.Sprintf("rate limited (429/503 with Retry-After) through every retry: the limit resets at %s", at)
}

// enter waits at host's gate: at once when it is open; else until it
// opens, ctx ends (ctx.Err()), or ctx's deadline is seen to end before the
// gate opens (a *BackoffError, without waiting).
func (hg *hostGates) enter(ctx context.Context, host string) (ticket, error) {
	hg.mu.Lock()
	g, ok := hg.gates.Get(host)
	if !ok {
		hg.mu.Unlock()
		return ticket{}, nil // the common case: no look further
	}
	start := g.closed
	for {
		now := time.Now()
		switch {
		case g.until.IsZero() && !g.probing:
			t := ticket{g: g, waited: g.closed - start}
			hg.mu.Unlock()
			return t, nil
		case now.Before(g.until):
			if dl, ok := ctx.Deadline(); ok && dl.Before(g.until) {
				err := &BackoffError{Host: g.host, Resets: g.resets, Deadline: true}
				hg.mu.Unlock()
				return ticket{}, err
			}
			ch, wait := g.changed, g.until.Sub(now)
			hg.mu.Unlock()
			if err := waitFor(ctx, ch, wait); err != nil {
				return ticket{}, err
			}
		case !g.probing:
			g.probing = true
			t := ticket{g: g, probe: true, waited: g.closed - start}
			hg.mu.Unlock()
			return t, nil
		default: // another request is probing: wait for its answer
			ch := g.changed
			hg.mu.Unlock()
			if err := waitFor(ctx, ch, -1); err != nil {
				return ticket{}, err
			}
		}
		hg.mu.Lock()
	}
}

// waitFor waits for ch to close, d to pass (d < 0: no limit) or ctx to end.
func waitFor(ctx context.Context, ch <-chan struct{}, d time.Duration) error {
	var timeout <-chan time.Time
	if d >= 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ch:
	case <-timeout:
	}
	return nil
}

// done tells host's gate how the request of t was answered. A 429 or 503
// with Retry-After closes the gate (closed: true); the answer of a probe
// opens it otherwise. A probe that got no answer because its caller gave
// up hands the probe to the next waiter.
func (hg *hostGates) done(ctx context.Context, host string, t ticket, resp *http.Response, err error) (closed bool) {
	wait, after := retryAfter(resp)
	if !after && !t.probe {
		return false
	}
	hg.mu.Lock()
	defer hg.mu.Unlock()
	g := t.g
	if g == nil {
		if !after {
			return false
		}
		if g, _ = hg.gates.Get(host); g == nil {
			g = &gate{host: host, changed: make(chan struct{})}
			hg.gates.Add(host, g)
		}
	}
	if t.probe {
		g.probing = false
	}
	switch {
	case after:
		now := time.Now()
		// The cap (retryMaxWait, transport.go) also holds here: a
		// registry saying "Retry-After: 3600" has its host asked again
		// after 10 s by one probe — one request per 10 s is no load,
		// and the limit may lift earlier than announced — rather than
		// every request to it held for an hour.
		extends := now.Before(g.until) && !t.probe
		if until := now.Add(min(max(wait, retryMinWait), hg.maxWait)); until.After(g.until) {
			g.until = until
		}
		if resets := now.Add(min(max(wait, 0), maxResetHorizon)); resets.After(g.resets) {
			g.resets = resets
		}
		// A new back-off, which those waiting count as an answer of their
		// own: a probe's, or the first of a burst sent while the gate was
		// open. The rest of the burst only extend it.
		if !extends {
			g.closed++
		}
	case err != nil && ctx.Err() != nil:
		// The probe's caller left: the next waiter asks.
	default:
		g.until, g.resets = time.Time{}, time.Time{}
	}
	close(g.changed)
	g.changed = make(chan struct{})
	return after
}

// retryAfter is the wait a 429 or 503 asks for in Retry-After (seconds or
// an HTTP date); ok is false for any other answer. The seconds are capped
// before they become a Duration, so that no value overflows.
func retryAfter(resp *http.Response) (wait time.Duration, ok bool) {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return 0, false
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, int64(maxResetHorizon/time.Second))) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return min(max(time.Until(at), 0), maxResetHorizon), true
	}
	return 0, false
}

// backoffAfter is the error of a request that waited through more
// back-offs of g than it has retries.
func (hg *hostGates) backoffAfter(t ticket) error {
	hg.mu.Lock()
	defer hg.mu.Unlock()
	return &BackoffError{Host: t.g.host, Resets: t.g.resets}
}

// release gives back a ticket that will not be used: a probe's turn goes
// to the next waiter.
func (hg *hostGates) release(t ticket) {
	if !t.probe {
		return
	}
	hg.mu.Lock()
	defer hg.mu.Unlock()
	t.g.probing = false
	close(t.g.changed)
	t.g.changed = make(chan struct{})
}

// HostBackoff is a host whose gate is closed now.
type HostBackoff struct {
	Host   string
	Until  time.Time // the gate opens (one request probes) then
	Resets time.Time // the registry said the limit resets then
}

// closedNow lists the hosts backed off now, sorted by host.
func (hg *hostGates) closedNow() []HostBackoff {
	hg.mu.Lock()
	defer hg.mu.Unlock()
	var out []HostBackoff
	now := time.Now()
	for _, g := range hg.gates.Values() {
		if g.until.After(now) || g.probing {
			out = append(out, HostBackoff{Host: g.host, Until: g.until, Resets: g.resets})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}
