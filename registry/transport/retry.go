package transport

import (
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// idempotentRetry retries GET, HEAD, DELETE and replayable PUT requests on 408,
// 429, 5xx, timeouts and reset connections (oras-go's retry.Transport and
// DefaultPredicate, which it replaces). POST and PATCH (upload sessions)
// are replayed only after a 429 or a 503, the two answers that say the
// registry did not act on the request (RFC 6585 §4, RFC 9110 §15.6.4), and
// only when their body can be sent again: after a reset or a 500 the
// registry may have acted on the first attempt. DELETE is idempotent (RFC 9110 §9.2.2): the one wharf sends
// cancels an upload session, and a reset one left the session open (the
// fault campaign found it); a replay of one that did act answers 404,
// which the canceller takes as done. Every request, replayed or not, first passes its host's gate
// (gate.go): a 429 or 503 with Retry-After backs the host off once for all
// of them, and the retry then waits at the gate, not on a timer of its
// own. Every answer's RateLimit headers are recorded (ratelimit.go).
type idempotentRetry struct {
	next   http.RoundTripper
	policy retryPolicy
	gates  *hostGates
	limits *rateLimits
}

func newIdempotentRetry(next http.RoundTripper, policy retryPolicy, gates *hostGates, limits *rateLimits) *idempotentRetry {
	return &idempotentRetry{next: next, policy: policy, gates: gates, limits: limits}
}

// replay says which failed attempts a request may be sent again after.
type replay int

const (
	replayNever       replay = iota
	replayUnprocessed        // only after 429 or 503: the registry did not act
	replayAll                // after any retryable answer or transport error
)

func (t *idempotentRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	rewindable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	switch {
	case req.Method == http.MethodGet || req.Method == http.MethodHead || req.Method == http.MethodDelete:
		return t.retry(req, replayAll)
	case req.Method == http.MethodPut && rewindable:
		return t.retry(req, replayAll)
	case rewindable:
		return t.retry(req, replayUnprocessed)
	}
	return t.retry(req, replayNever)
}

// unprocessed says the registry answered without acting on the request.
func unprocessed(resp *http.Response, err error) bool {
	return err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable)
}

// send is one attempt through host's gate, its rate limit recorded;
// closed says the answer backed the host off.
func (t *idempotentRetry) send(req *http.Request, host string, tk ticket) (resp *http.Response, closed bool, err error) {
	resp, err = t.next.RoundTrip(req)
	if err == nil {
		t.limits.observe(host, identityOf(req.Context()), resp)
	}
	return resp, t.gates.done(req.Context(), host, tk, resp, err), err
}

func (t *idempotentRetry) retry(req *http.Request, mode replay) (*http.Response, error) {
	ctx := req.Context()
	host := strings.ToLower(req.URL.Host)
	for attempt := 0; ; attempt++ {
		tk, err := t.gates.enter(ctx, host)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		// The back-offs waited through are answers this request shares:
		// past its retries, it does not probe again. A gate that opened
		// (the probe was answered) is still worth one last attempt.
		if attempt += tk.waited; mode != replayNever && attempt > t.policy.maxRetry {
			if tk.probe {
				t.gates.release(tk)
				closeBody(req)
				return nil, t.gates.backoffAfter(tk)
			}
			attempt = t.policy.maxRetry
		}
		resp, closed, err := t.send(req, host, tk)
		if mode == replayNever || mode == replayUnprocessed && !unprocessed(resp, err) {
			return resp, err
		}
		wait, ok, perr := t.policy.retry(attempt, resp, err)
		if perr != nil {
			if err == nil {
				resp.Body.Close()
			}
			return nil, perr
		}
		if !ok {
			return resp, err
		}
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return resp, err
			}
			body, gerr := req.GetBody()
			if gerr != nil {
				return resp, err
			}
			req.Body = body
		}
		if err == nil {
			resp.Body.Close()
		}
		if closed {
			continue // the next attempt waits at the gate, with the others
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// retryPolicy: at most maxRetry retries, waits between minWait and maxWait,
// exponential from 250 ms (factor 2, 10 % jitter), or Retry-After on 429
// and 503.
type retryPolicy struct {
	minWait, maxWait time.Duration
	maxRetry         int
}

func newRetryPolicy(maxWait time.Duration) retryPolicy {
	return retryPolicy{minWait: retryMinWait, maxWait: maxWait, maxRetry: retryAttempts}
}

// retry says whether attempt (0 = the first) is tried again, and after
// how long. An error no retry can help is returned as perr.
func (p retryPolicy) retry(attempt int, resp *http.Response, err error) (wait time.Duration, ok bool, perr error) {
	if attempt >= p.maxRetry {
		return 0, false, nil
	}
	if err != nil {
		var ne net.Error
		if !(errors.As(err, &ne) && ne.Timeout()) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, false, err
		}
	} else if !retryableStatus(resp.StatusCode) {
		return 0, false, nil
	}
	return min(max(p.backoff(attempt, resp), p.minWait), p.maxWait), true, nil
}

func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code == 0 || code >= 500
}

func (p retryPolicy) backoff(attempt int, resp *http.Response) time.Duration {
	if wait, ok := retryAfter(resp); ok { // gate.go
		return wait // clamped to [minWait, maxWait] by retry
	}
	const base, factor, jitter = 250 * time.Millisecond, 2.0, 0.1
	d := float64(base) * math.Pow(factor, float64(attempt))
	wait := time.Duration(d * (1 - jitter))
	if r := int64(2 * jitter * d); r > 0 {
		wait += time.Duration(rand.Int64N(r))
	}
	return wait
}
