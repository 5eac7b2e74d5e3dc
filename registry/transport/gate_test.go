package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

// limitedRegistry answers 429 + Retry-After: 1 to everything until
// limitedFor has passed since the first batch of n requests was answered;
// that batch is held until all n are in, so that every request of it is
// sent before any 429 comes back. It counts the requests that arrive
// during the back-off (after the batch, while still limited).
type limitedRegistry struct {
	n          int
	limitedFor time.Duration

	mu       sync.Mutex
	arrived  int
	released chan struct{}
	at       time.Time // when the batch was answered
	during   int       // requests after the batch, answered 429
	total    atomic.Int64
}

func (l *limitedRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.total.Add(1)
	l.mu.Lock()
	if l.arrived < l.n {
		l.arrived++
		if l.arrived == l.n {
			l.at = time.Now()
			close(l.released)
		}
		l.mu.Unlock()
		<-l.released
		tooMany(w)
		return
	}
	limited := time.Since(l.at) < l.limitedFor
	if limited {
		l.during++
	}
	l.mu.Unlock()
	if limited {
		tooMany(w)
		return
	}
	w.Header().Set("RateLimit-Limit", "100;w=21600")
	w.Header().Set("RateLimit-Remaining", "76;w=21600")
	io.WriteString(w, "ok")
}

func tooMany(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("RateLimit-Remaining", "0;w=21600")
	w.WriteHeader(http.StatusTooManyRequests)
}

// 64 concurrent requests all answered 429 + Retry-After: 1 back the host
// off once: during the second of back-off that follows (the registry still
// limiting for 1.5 s), one request probes, not 64; after it all succeed.
// Before the gate, each request slept and retried on its own: 64 requests
// arrived during the back-off.
func TestConcurrentRequestsShareOneBackoff(t *testing.T) {
	const n = 64
	reg := &limitedRegistry{n: n, limitedFor: 1500 * time.Millisecond, released: make(chan struct{})}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	s := testStack(t, Options{})
	c := s.NewClient(ClientConfig{Identity: "alice"})

	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v2/r/manifests/1", nil)
			resp, err := c.Do(req)
			if err != nil {
				errs <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- errors.New(resp.Status)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("request: %v", err)
	}
	reg.mu.Lock()
	during := reg.during
	reg.mu.Unlock()
	if during != 1 {
		t.Errorf("%d requests during the back-off, want 1 (the probe); %d in all", during, reg.total.Load())
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	rl, ok := c.RateLimit(host)
	if !ok || rl.Limit != 100 || rl.Remaining != 76 || rl.Window != 6*time.Hour || rl.Host != host || rl.Seen.IsZero() {
		t.Errorf("rate limit %+v %v, want 100, 76 per 6h from %s", rl, ok, host)
	}
	if _, ok := s.NewClient(ClientConfig{Identity: "bob"}).RateLimit(host); ok {
		t.Error("bob sees alice's rate limit")
	}
	if got := s.Backoffs(); len(got) != 0 {
		t.Errorf("backoffs after success: %+v", got)
	}
}

// closedGate is a gate backed off by a 429 + Retry-After of wait.
func closedGate(t *testing.T, wait time.Duration) (*hostGates, string) {
	t.Helper()
	hg := newHostGates(time.Minute)
	resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{}}
	resp.Header.Set("Retry-After", wait.String()[:len(wait.String())-1]) // "30s" → "30"
	if !hg.done(context.Background(), "h", ticket{}, resp, nil) {
		t.Fatal("a 429 with Retry-After did not close the gate")
	}
	return hg, "h"
}

// A caller whose deadline ends before the gate opens fails at once, with
// an Unavailable error naming when the limit resets.
func TestGateDeadlineBeforeOpeningFailsAtOnce(t *testing.T) {
	hg, host := closedGate(t, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := hg.enter(ctx, host)
	// At once: enter answered before the caller's deadline came, so it did
	// not wait for it.
	if ctx.Err() != nil {
		t.Errorf("enter returned after its caller's deadline (%v), want at once", ctx.Err())
	}
	var be *BackoffError
	if !errors.As(err, &be) || !be.Deadline {
		t.Fatalf("err %v, want a deadline BackoffError", err)
	}
	resets := be.Resets.UTC().Format(time.RFC3339)
	cerr := classify(err, host)
	if !errdefs.IsUnavailable(cerr) || !strings.Contains(cerr.Error(), resets) || !strings.Contains(cerr.Error(), "registry h is unavailable") {
		t.Errorf("classified %q (unavailable %v), want Unavailable naming %s", cerr, errdefs.IsUnavailable(cerr), resets)
	}
}

// A waiter leaves when its context is cancelled, and the gate stays closed
// for the others.
func TestGateWaitHonoursCancel(t *testing.T) {
	hg, host := closedGate(t, 30*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := hg.enter(ctx, host)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	if got := hg.closedNow(); len(got) != 1 || got[0].Host != host {
		t.Errorf("closed gates %+v, want %s", got, host)
	}
}

// When the gate's time is up one request probes and the others wait for
// its answer; a probe whose caller left hands the turn to a waiter; an
// answer without Retry-After opens the gate for all.
func TestGateOneProbeAtATime(t *testing.T) {
	hg, host := closedGate(t, 0) // Retry-After: 0 → retryMinWait
	ctx := context.Background()
	p1, err := hg.enter(ctx, host)
	if err != nil || !p1.probe {
		t.Fatalf("first after the wait: %+v %v, want the probe", p1, err)
	}
	got := make(chan ticket, 1)
	go func() {
		tk, _ := hg.enter(ctx, host)
		got <- tk
	}()
	// The probe's caller leaves: the waiter probes instead.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	hg.done(cctx, host, p1, nil, context.Canceled)
	p2 := <-got
	if !p2.probe {
		t.Fatalf("waiter after the probe left: %+v, want the probe", p2)
	}
	hg.done(ctx, host, p2, &http.Response{StatusCode: http.StatusOK}, nil)
	if tk, err := hg.enter(ctx, host); err != nil || tk.probe || tk.waited != 0 {
		t.Errorf("after the probe's 200: %+v %v, want an open gate", tk, err)
	}
}

// A registry that never stops answering 429 + Retry-After: 0 costs the
// waiters their retries, shared: each probe's answer counts for every
// request waiting, so 8 concurrent requests send 8 + about 2 requests, not
// 8 × 3, and fail Unavailable saying when the limit resets.
func TestBackoffIsBoundedByRetries(t *testing.T) {
	var total atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		total.Add(1)
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	c := testStack(t, Options{}).NewClient(ClientConfig{})
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v2/r/manifests/1", nil)
			resp, err := c.Do(req)
			if err == nil {
				// The last 429 itself, for the caller to classify.
				resp.Body.Close()
				if resp.StatusCode == http.StatusTooManyRequests {
					err = StatusError(http.MethodGet, resp, nil, "h")
				}
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errdefs.IsUnavailable(err) {
			t.Errorf("err %v, want Unavailable", err)
		}
	}
	t.Logf("%d requests", total.Load())
	if got := total.Load(); got >= n*(retryAttempts+1) {
		t.Errorf("%d requests, want fewer than %d (each retrying on its own)", got, n*(retryAttempts+1))
	}
}

func TestRetryAfter(t *testing.T) {
	mk := func(status int, v string) *http.Response {
		return &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {v}}}
	}
	for _, tc := range []struct {
		resp *http.Response
		want time.Duration
		ok   bool
	}{
		{mk(429, "2"), 2 * time.Second, true},
		{mk(503, " 0 "), 0, true},
		{mk(429, "99999999999999999"), maxResetHorizon, true},
		{mk(429, time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)), 0, true},
		{mk(429, "-1"), 0, false},
		{mk(429, "soon"), 0, false},
		{mk(429, ""), 0, false},
		{mk(500, "2"), 0, false},
		{nil, 0, false},
	} {
		got, ok := retryAfter(tc.resp)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%v: %v %v, want %v %v", tc.resp, got, ok, tc.want, tc.ok)
		}
	}
}
