package transport

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

// uploadTimeouts: a 200 ms window so that a stall shows within a second.
func uploadTimeouts() timeouts {
	tm := defaultTimeouts()
	tm.window, tm.header = 200*time.Millisecond, 400*time.Millisecond
	return tm
}

// endless is an upload body that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

func put(t *testing.T, rt http.RoundTripper, url string, body io.Reader) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return rt.RoundTrip(req)
}

// A registry that takes the request and stops reading its body: the upload
// ends within a few windows, naming the registry.
func TestUploadThatTheRegistryStopsReadingEnds(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.CopyN(io.Discard, r.Body, 64<<10) // then stop reading
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	tr := newHostTransports(hostsConfig(t), uploadTimeouts(), nil)
	// The registry holds the request until the test ends: the upload ends
	// only if the guard ends it, and the error below says it did, on the
	// first window in which nothing was taken. The deadline turns a guard
	// that never fires into a failure instead of a hang.
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := put(t, tr, srv.URL+"/v2/a/blobs/uploads/1?digest=x", endless{})
		done <- result{resp, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(time.Minute):
		t.Fatal("a stalled upload did not end")
	}
	resp, err := res.resp, res.err
	if err == nil {
		resp.Body.Close()
		t.Fatal("a stalled upload succeeded")
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if !errdefs.IsUnavailable(err) || !strings.Contains(err.Error(), "registry "+host+" is unavailable: it stopped reading the upload (nothing taken in 200ms)") {
		t.Errorf("err = %v", err)
	}
}

// A registry that reads the whole body and never answers: the guard ends
// the wait at the response-header timeout even where net/http has none.
func TestUploadWithoutAnAnswerEnds(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	tr := newHostTransports(hostsConfig(t), uploadTimeouts(), &http.Transport{}) // no ResponseHeaderTimeout
	resp, err := put(t, tr, srv.URL+"/v2/a/manifests/1", bytes.NewReader(make([]byte, 4096)))
	if err == nil {
		resp.Body.Close()
		t.Fatal("an unanswered upload succeeded")
	}
	if !errdefs.IsUnavailable(err) || !strings.Contains(err.Error(), "no answer within 400ms of the end of the upload") {
		t.Errorf("err = %v", err)
	}
}

// A slow registry that keeps reading gets the whole upload, across many
// windows, and its answer body is readable after the guard has stepped
// aside. The registry is in-process (steadyRegistry): it takes the body in
// 16 KiB pieces and ends the guard's window itself after each (the
// timer's tick; the windows are far too long to end on their own), so the
// rule is checked at the same points on every machine, loaded or not.
func TestSlowButSteadyUploadPasses(t *testing.T) {
	const size = 1 << 20
	tm := uploadTimeouts()
	tm.window, tm.header = time.Hour, time.Hour
	reg := &steadyRegistry{piece: 16 << 10}
	tr := newHostTransports(hostsConfig(t), tm, reg)
	resp, err := put(t, tr, "http://127.0.0.1:1/v2/a/blobs/uploads/1", io.LimitReader(endless{}, size))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated || len(b) != size/1024 {
		t.Errorf("status %d, %d bytes, %v", resp.StatusCode, len(b), err)
	}
	// The upload spanned several windows, or this proves nothing.
	if want := size / reg.piece; reg.windows < want {
		t.Errorf("the upload spanned %d windows, want at least %d", reg.windows, want)
	}
}

// steadyRegistry is a registry in the transport's place: it reads an
// upload a piece at a time, ending the upload guard's window after each,
// and answers 201 with a body of a byte per KiB received, readable only
// while the request's context lives.
type steadyRegistry struct {
	piece   int
	windows int // windows ended during the upload
}

func (s *steadyRegistry) RoundTrip(req *http.Request) (*http.Response, error) {
	defer req.Body.Close()
	gb, ok := req.Body.(*guardedBody)
	if !ok {
		return nil, fmt.Errorf("the upload body is a %T, not under the upload guard", req.Body)
	}
	buf := make([]byte, s.piece)
	var n int64
	for {
		k, err := io.ReadFull(req.Body, buf)
		n += int64(k)
		gb.g.tick() // the window ends here
		s.windows++
		if cause := context.Cause(req.Context()); cause != nil {
			return nil, cause
		}
		if err != nil {
			break
		}
	}
	body := &ctxReader{ctx: req.Context(), r: strings.NewReader(strings.Repeat("y", int(n/1024)))}
	return &http.Response{StatusCode: http.StatusCreated, Header: http.Header{}, Body: io.NopCloser(body), Request: req}, nil
}

// ctxReader fails once ctx is done, as a response body on a closed
// connection does.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := context.Cause(c.ctx); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// The caller's own context still ends an upload at once.
func TestUploadEndsWithItsCallersContext(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	tm := uploadTimeouts()
	tm.window = time.Minute
	tr := newHostTransports(hostsConfig(t), tm, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+"/v2/a/blobs/uploads/1", endless{})
	_, err := tr.RoundTrip(req)
	if err == nil || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Errorf("err = %v, want the caller's deadline", err)
	}
}
