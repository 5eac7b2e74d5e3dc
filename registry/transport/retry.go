package transport

import (
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// idempotentRetry retries GET, HEAD and replayable PUT requests on 408,
// 429, 5xx, timeouts and reset connections (oras-go's retry.Transport and
// DefaultPredicate, which it replaces); POST and PATCH (upload sessions)
// are never replayed because the registry may have acted on the first
// attempt.
type idempotentRetry struct {
	next   http.RoundTripper
	policy retryPolicy
}

func newIdempotentRetry(next http.RoundTripper, policy retryPolicy) *idempotentRetry {
	return &idempotentRetry{next: next, policy: policy}
}

func (t *idempotentRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		return t.retry(req)
	case http.MethodPut:
		if req.Body == nil || req.Body == http.NoBody || req.GetBody != nil {
			return t.retry(req)
		}
	}
	return t.next.RoundTrip(req)
}

func (t *idempotentRetry) retry(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	for attempt := 0; ; attempt++ {
		resp, err := t.next.RoundTrip(req)
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
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
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
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		v := strings.TrimSpace(resp.Header.Get("Retry-After"))
		if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
			return time.Duration(s) * time.Second
		}
		if at, err := http.ParseTime(v); err == nil {
			return time.Until(at) // clamped to [minWait, maxWait] by retry
		}
	}
	const base, factor, jitter = 250 * time.Millisecond, 2.0, 0.1
	d := float64(base) * math.Pow(factor, float64(attempt))
	wait := time.Duration(d * (1 - jitter))
	if r := int64(2 * jitter * d); r > 0 {
		wait += time.Duration(rand.Int64N(r))
	}
	return wait
}
