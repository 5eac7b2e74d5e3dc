package transport

import (
	"io"
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
	start := time.Now()
	_, err = io.ReadAll(body)
	if err == nil || !strings.Contains(err.Error(), "registry "+host) || !errdefs.IsUnavailable(err) {
		t.Fatalf("err = %v, want unavailable naming %s", err, host)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s", d)
	}
}

// A body faster than the rule passes whole, across several windows.
func TestSlowBodyPassesAFastBody(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		chunk := make([]byte, 4<<10)
		for i := 0; i < 10; i++ {
			pw.Write(chunk)
			time.Sleep(30 * time.Millisecond)
		}
		pw.Close()
	}()
	body := newSlowBody(pr, "h", 50*time.Millisecond)
	n, err := io.Copy(io.Discard, body)
	if err != nil || n != 40<<10 {
		t.Fatalf("n=%d err=%v", n, err)
	}
}
