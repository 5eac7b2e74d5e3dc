package transport

import (
	"bytes"
	"context"
	"io"
	"net"
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
	t0 := time.Now()
	resp, err := put(t, tr, srv.URL+"/v2/a/blobs/uploads/1?digest=x", endless{})
	if err == nil {
		resp.Body.Close()
		t.Fatal("a stalled upload succeeded")
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if !errdefs.IsUnavailable(err) || !strings.Contains(err.Error(), "registry "+host+" is unavailable: it stopped reading the upload (nothing taken in 200ms)") {
		t.Errorf("err = %v", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("took %s", d)
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

// A slow registry that keeps reading (16 KiB every 20 ms: a 32 KiB piece
// in 40 ms, well within the 200 ms window) gets the whole upload, across
// several windows, and its answer body is readable after the guard has
// stepped aside. 32 KiB socket buffers on both ends make the sender follow
// the reader's pace (smaller ones make loopback TCP crawl on delayed ACKs).
func TestSlowButSteadyUploadPasses(t *testing.T) {
	const size = 1 << 20
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int64
		buf := make([]byte, 16<<10)
		for {
			k, err := io.ReadFull(r.Body, buf)
			n += int64(k)
			if err != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, strings.Repeat("y", int(n/1024)))
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if tc, ok := c.(*net.TCPConn); ok && s == http.StateNew {
			tc.SetReadBuffer(32 << 10)
		}
	}
	srv.Start()
	defer srv.Close()
	small := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetWriteBuffer(32 << 10)
		}
		return c, err
	}}
	tm := uploadTimeouts()
	tm.header = time.Second // the registry drains the socket buffers (~128 KiB) before it answers
	tr := newHostTransports(hostsConfig(t), tm, small)
	t0 := time.Now()
	resp, err := put(t, tr, srv.URL+"/v2/a/blobs/uploads/1", io.LimitReader(endless{}, size))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated || len(b) != size/1024 {
		t.Errorf("status %d, %d bytes, %v", resp.StatusCode, len(b), err)
	}
	// The upload spanned several windows, or this proves nothing.
	if d := time.Since(t0); d < 3*uploadTimeouts().window {
		t.Errorf("upload took only %s", d)
	}
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
