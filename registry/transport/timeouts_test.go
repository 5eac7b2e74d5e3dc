package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

func TestNewTimeouts(t *testing.T) {
	for _, tc := range []struct {
		d       time.Duration
		want    timeouts
		wantErr bool
	}{
		{0, defaultTimeouts(), false},
		{2 * time.Second, timeouts{dial: 2 * time.Second, handshake: 2 * time.Second, header: 2 * time.Second, window: 2 * time.Second}, false},
		{time.Minute, timeouts{dial: dialTimeout, handshake: tlsHandshakeTimeout, header: time.Minute, window: time.Minute}, false},
		{-time.Second, defaultTimeouts(), true},
	} {
		got, err := newTimeouts(tc.d)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v, error %v", tc.d, got, err, tc.want, tc.wantErr)
		}
	}
	// Shared work allows what one request may take at worst.
	if got, want := defaultTimeouts().shared(), 4*time.Minute; got != want {
		t.Errorf("shared() = %s, want %s", got, want)
	}
}

// The stack takes its timeouts from Options (registry.ServiceOptions),
// never from the environment (WHARF_REGISTRY_TIMEOUT was a hidden knob).
func TestStackTimeoutOption(t *testing.T) {
	t.Setenv("WHARF_REGISTRY_TIMEOUT", "1ms")
	s, err := New(hostsConfig(t), Options{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if s.tm.header != 3*time.Second || s.tm.window != 3*time.Second {
		t.Errorf("timeouts %+v, want header and window 3s", s.tm)
	}
	if _, err := New(hostsConfig(t), Options{Timeout: -time.Second}); err == nil {
		t.Errorf("negative timeout accepted")
	}
}

// A body trickling a byte every 20 ms delivers far fewer than minBodyBytes
// in a 200 ms window: the read fails naming the host, well before the body
// would have ended.
func TestSlowBodyEndsATrickle(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		for i := 0; i < 500; i++ {
			if _, err := w.Write([]byte{'x'}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	body := newSlowBody(resp.Body, host, 200*time.Millisecond)
	defer body.Close()
	got, err := io.ReadAll(body)
	if err == nil || !strings.Contains(err.Error(), "registry "+host) || !errdefs.IsUnavailable(err) {
		t.Fatalf("err = %v, want unavailable naming %s", err, host)
	}
	// Counted, not timed: the read ended with most of the body unsent.
	if len(got) >= 500/2 {
		t.Errorf("read %d of the 500 bytes before the trickle was cut", len(got))
	}
}

// A body faster than the rule passes whole, across several windows. The
// test closes each window itself (the timer's tick, with a window far too
// long to fire on its own) after a piece of 4 KiB has been read: the rule
// is checked at the same points on every machine, not against a writer's
// pace on a loaded one.
func TestSlowBodyPassesAFastBody(t *testing.T) {
	const windows, piece = 10, 4 << 10
	pr, pw := io.Pipe()
	go func() {
		chunk := make([]byte, piece)
		for i := 0; i < windows; i++ {
			pw.Write(chunk)
		}
		pw.Close()
	}()
	body := newSlowBody(pr, "h", time.Hour)
	defer body.Close()
	buf := make([]byte, piece)
	for i := 0; i < windows; i++ {
		if _, err := io.ReadFull(body, buf); err != nil {
			t.Fatalf("window %d: %v", i, err)
		}
		body.tick() // the window ends with a piece received
		body.mu.Lock()
		killed, n := body.killed, body.n
		body.mu.Unlock()
		if killed || n != 0 {
			t.Fatalf("window %d: %d bytes received, killed %v, counted %d after the tick; want alive, a new window at 0", i, piece, killed, n)
		}
	}
	if n, err := io.Copy(io.Discard, body); err != nil || n != 0 {
		t.Fatalf("after %d pieces: %d more bytes, %v; want EOF", windows, n, err)
	}
	// The same rule ends a window with too little in it.
	short := newSlowBody(io.NopCloser(strings.NewReader("x")), "h", time.Hour)
	defer short.Close()
	if _, err := short.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	short.tick()
	if _, err := short.Read(make([]byte, 1)); err == nil || !errdefs.IsUnavailable(err) {
		t.Errorf("a window with 1 byte: %v, want unavailable", err)
	}
}

// A registry that never sends its headers fails with an error that names
// the bounds in force, so `--registry-timeout 2s` is visible in what the
// user reads, and that is still a timeout to everything that classifies
// it: net.Error's Timeout through http.Client's url.Error (the retries'
// test), and the Unavailable class.
func TestTimeoutErrorNamesTheBoundsInForce(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	tm, err := newTimeouts(150 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	base := newBaseTransport(tm)
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := base.RoundTrip(r)
		if err != nil {
			return nil, tm.named(r.Context(), err)
		}
		return resp, nil
	})}
	_, err = client.Get(srv.URL)
	var te *TimeoutError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "response headers 150ms") {
		t.Fatalf("err = %v, want a TimeoutError naming response headers 150ms", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("err = %v: not a timeout to net.Error", err)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if c := classify(err, host); !errdefs.IsUnavailable(c) {
		t.Errorf("classify = %v, want Unavailable", c)
	}

	// The caller's own deadline, and errors that are no timeout, pass as
	// they are.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	plain := errors.New("connection refused")
	if got := tm.named(ctx, &net.OpError{Op: "dial", Err: timeoutErr{}}); errors.As(got, &te) {
		t.Errorf("a cancelled caller's error was named: %v", got)
	}
	if got := tm.named(context.Background(), plain); got != plain {
		t.Errorf("a non-timeout was wrapped: %v", got)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
