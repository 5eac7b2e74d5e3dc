package transport

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A DELETE is idempotent (RFC 9110 §9.2.2), so a reset one is sent again:
// the fault campaign found an upload session left open when the DELETE
// that cancels it was reset (cancelUpload gives up on a DELETE that gets
// no answer). A POST, which the registry may have acted on, is not.
func TestResetDeleteIsRetriedPostIsNot(t *testing.T) {
	for _, tc := range []struct {
		method string
		sends  int // want
		ok     bool
	}{
		{http.MethodDelete, 2, true},
		{http.MethodPost, 1, false},
	} {
		sends := 0
		next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sends++
			if sends == 1 {
				return nil, fmt.Errorf("read tcp: %w", syscall.ECONNRESET)
			}
			return &http.Response{StatusCode: http.StatusNoContent, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{}, Request: r}, nil
		})
		rt := newIdempotentRetry(next, newRetryPolicy(time.Second), newHostGates(time.Second), newRateLimits())
		req, err := http.NewRequest(tc.method, "http://registry.test/v2/a/blobs/uploads/1", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if (err == nil) != tc.ok || sends != tc.sends {
			t.Errorf("%s after a reset: %d sends, err %v; want %d sends, ok %v", tc.method, sends, err, tc.sends, tc.ok)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
}

// A 429 or a 503 says the registry did not act on the request (RFC 6585
// §4), so a POST or a PATCH whose body can be sent again is sent again,
// through the host's gate; a 500 might have been acted on, and a PATCH
// streaming a body that cannot be rewound is never replayed. Before, a
// POST that opens an upload session failed the push on the first 429.
func TestUnprocessedPostIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		status int
		body   func() io.Reader
		sends  int // want
		ok     bool
	}{
		{"POST 429", http.MethodPost, http.StatusTooManyRequests, nil, 2, true},
		{"POST 503", http.MethodPost, http.StatusServiceUnavailable, nil, 2, true},
		{"POST 500", http.MethodPost, http.StatusInternalServerError, nil, 1, false},
		{"PATCH 429 rewindable", http.MethodPatch, http.StatusTooManyRequests, func() io.Reader { return strings.NewReader("chunk") }, 2, true},
		{"PATCH 429 stream", http.MethodPatch, http.StatusTooManyRequests, func() io.Reader { return io.MultiReader(strings.NewReader("chunk")) }, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sends := 0
			next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				sends++
				if r.Body != nil {
					if b, _ := io.ReadAll(r.Body); r.Method == http.MethodPatch && string(b) != "chunk" {
						t.Errorf("send %d carried body %q", sends, b)
					}
				}
				h := http.Header{}
				if sends == 1 {
					h.Set("Retry-After", "0")
					return &http.Response{StatusCode: tc.status, Body: io.NopCloser(strings.NewReader("")), Header: h, Request: r}, nil
				}
				return &http.Response{StatusCode: http.StatusAccepted, Body: io.NopCloser(strings.NewReader("")), Header: h, Request: r}, nil
			})
			rt := newIdempotentRetry(next, retryPolicy{minWait: time.Millisecond, maxWait: time.Millisecond, maxRetry: 3}, newHostGates(time.Second), newRateLimits())
			var body io.Reader
			if tc.body != nil {
				body = tc.body()
			}
			req, err := http.NewRequest(tc.method, "http://registry.test/v2/a/blobs/uploads/", body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if ok := resp.StatusCode == http.StatusAccepted; ok != tc.ok || sends != tc.sends {
				t.Errorf("%d sends, final %d; want %d sends, accepted %v", sends, resp.StatusCode, tc.sends, tc.ok)
			}
		})
	}
}
