package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
)

// A host with no certs dir shares the base transport.
func TestOrdinaryHostSharesBaseTransport(t *testing.T) {
	tr := newHostTransports(hostsConfig(t), defaultTimeouts(), nil)
	if e, err := tr.forHost(context.Background(), "quay.io"); err != nil || e.rt != tr.base {
		t.Errorf("ordinary host: %v %v, want the shared base transport", e, err)
	}
}

// A body that sends nothing ends within one window (the watchdog that was
// idleReader's job is slowBody's).
func TestSilentBodyTimesOut(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	b := newSlowBody(pr, "h", 20*time.Millisecond)
	defer b.Close()
	_, err := b.Read(make([]byte, 1))
	if !errdefs.IsUnavailable(err) {
		t.Errorf("idle read: %v, want Unavailable", err)
	}
}

func TestRetryPolicyHonoursRetryAfterWithinCap(t *testing.T) {
	p := newRetryPolicy(2 * time.Second)
	mk := func(status int, ra string) *http.Response {
		r := &http.Response{StatusCode: status, Header: http.Header{}}
		if ra != "" {
			r.Header.Set("Retry-After", ra)
		}
		return r
	}
	tests := []struct {
		resp     *http.Response
		attempt  int
		min, max time.Duration // want in [min, max]; max < 0 = no retry
	}{
		{mk(429, "1"), 0, time.Second, time.Second},
		{mk(503, "1"), 0, time.Second, time.Second},
		{mk(429, "3600"), 0, 2 * time.Second, 2 * time.Second},
		{mk(429, time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)), 0, 2 * time.Second, 2 * time.Second},
		{mk(500, ""), 0, retryMinWait, 2 * time.Second},
		{mk(404, ""), 0, -1, -1},
		{mk(429, "1"), retryAttempts, -1, -1},
	}
	for i, tc := range tests {
		d, ok, err := p.retry(tc.attempt, tc.resp, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			d = -1
		}
		if tc.max < 0 {
			if d >= 0 {
				t.Errorf("%d: retried after %s, want no retry", i, d)
			}
			continue
		}
		if d < tc.min || d > tc.max {
			t.Errorf("%d: wait %s, want in [%s, %s]", i, d, tc.min, tc.max)
		}
	}
}

// TestUploadCheck: a 201 whose Docker-Content-Digest names another digest
// than the upload (PUT ?digest=) or the mount (POST ?mount=) is an error;
// agreeing, absent or non-201 answers pass through.
func TestUploadCheck(t *testing.T) {
	d := digest.FromString("a")
	other := digest.FromString("b")
	cases := []struct {
		name, method, query, header string
		status                      int
		wantErr                     bool
	}{
		{"put agrees", http.MethodPut, "digest=" + d.String(), d.String(), 201, false},
		{"put other digest", http.MethodPut, "digest=" + d.String(), other.String(), 201, true},
		{"put garbage header", http.MethodPut, "digest=" + d.String(), "nonsense", 201, true},
		{"put no header", http.MethodPut, "digest=" + d.String(), "", 201, false},
		{"mount other digest", http.MethodPost, "mount=" + d.String() + "&from=x", other.String(), 201, true},
		{"mount refused", http.MethodPost, "mount=" + d.String(), other.String(), 202, false},
		{"patch", http.MethodPatch, "", other.String(), 202, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				h := http.Header{}
				if tc.header != "" {
					h.Set("Docker-Content-Digest", tc.header)
				}
				return &http.Response{StatusCode: tc.status, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
			})
			req, _ := http.NewRequest(tc.method, "http://127.0.0.1:1/v2/r/blobs/uploads/x?"+tc.query, nil)
			_, err := uploadCheck{rt}.RoundTrip(req)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ErrDigestMismatch) {
				t.Errorf("err = %v, want ErrDigestMismatch", err)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
