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
