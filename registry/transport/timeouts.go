package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/containerd/errdefs"
)

// timeouts bound every wait on a registry. ServiceOptions.Timeout (wharfd's
// --registry-timeout, "registry-timeout" in daemon.json) sets header and
// window and caps dial and handshake; the defaults are production's.
type timeouts struct {
	dial      time.Duration // TCP connect
	handshake time.Duration // TLS handshake, also of the scheme probe
	header    time.Duration // request sent → response headers
	// window is the slow-body rule, in both directions: a response body
	// that delivers fewer than minBodyBytes in any window is abandoned, and
	// so is an upload of which the registry takes nothing in a window
	// (upload.go). A dead connection and one trickling a byte a second both
	// end within one window.
	window time.Duration
}

// blobIdleTimeout is the default window: ResponseHeaderTimeout bounds the
// wait for headers, not a body that stalls halfway; 30 s of (near) silence
// is a dead connection, not a slow one.
const blobIdleTimeout = 30 * time.Second

// minBodyBytes per window: 1 KiB in 30 s is 34 B/s, far below any real
// link, and far above a registry that trickles a byte a second.
const minBodyBytes = 1 << 10

func defaultTimeouts() timeouts {
	return timeouts{dial: dialTimeout, handshake: tlsHandshakeTimeout, header: responseHeaderTimeout, window: blobIdleTimeout}
}

// newTimeouts applies ServiceOptions.Timeout: 0 keeps the defaults; a
// positive d replaces the response-header timeout and the slow-body window
// and caps the dial and TLS handshake timeouts (a 2 s setting must not wait
// 10 s for a connection).
func newTimeouts(d time.Duration) (timeouts, error) {
	t := defaultTimeouts()
	switch {
	case d == 0:
		return t, nil
	case d < 0:
		return t, fmt.Errorf("registry timeout %s is not a positive duration", d)
	}
	t.header, t.window = d, d
	t.dial = min(t.dial, d)
	t.handshake = min(t.handshake, d)
	return t, nil
}

// TimeoutError is a registry that took longer than a bound: it names the
// bounds in force, so that a user who set --registry-timeout sees which
// applied ("net/http: timeout awaiting response headers" alone does not
// say how long was waited). It is a net.Error whose Timeout is true, so
// the retries and the error classes treat it as the error it wraps.
type TimeoutError struct {
	Err                      error
	Dial, Handshake, Headers time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%v (registry timeouts: connect %s, TLS handshake %s, response headers %s)", e.Err, e.Dial, e.Handshake, e.Headers)
}

func (e *TimeoutError) Unwrap() error { return e.Err }

// Timeout is always true: only timeouts are wrapped.
func (e *TimeoutError) Timeout() bool { return true }

// Temporary is net.Error's, as the wrapped error has it.
func (e *TimeoutError) Temporary() bool { return true }

// named wraps err in a TimeoutError when it is a timeout of the transport
// (not the caller's own deadline or cancellation, which say so already).
func (t timeouts) named(ctx context.Context, err error) error {
	var ne net.Error
	if ctx.Err() != nil || !errors.As(err, &ne) || !ne.Timeout() {
		return err
	}
	return &TimeoutError{Err: err, Dial: t.dial, Handshake: t.handshake, Headers: t.header}
}

// shared bounds work that several callers wait on together (a token fetch,
// a host's set-up, a scheme probe): it runs detached from any one caller,
// so it needs a limit of its own. It allows what one request may take at
// worst — retryAttempts+1 tries of connect, handshake, headers and one body
// window — so a success that a single caller could have waited for is never
// cut short: 3 × (10+10+30+30 s) = 4 min by default.
func (t timeouts) shared() time.Duration {
	return time.Duration(retryAttempts+1) * (t.dial + t.handshake + t.header + t.window)
}

// slowBody guards a response body with the slow-body rule. When it fires
// it closes the body, so a Read blocked on the network returns, and the
// reader's error names the registry.
type slowBody struct {
	rc     io.ReadCloser
	host   string
	window time.Duration
	timer  *time.Timer

	mu     sync.Mutex
	n      int64 // bytes in the current window
	done   bool  // EOF, error or Close: the timer is stopped for good
	killed bool
}

func newSlowBody(rc io.ReadCloser, host string, window time.Duration) *slowBody {
	b := &slowBody{rc: rc, host: host, window: window}
	b.timer = time.AfterFunc(window, b.tick)
	return b
}

func (b *slowBody) tick() {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	if b.n >= minBodyBytes {
		b.n = 0
		b.timer.Reset(b.window)
		b.mu.Unlock()
		return
	}
	b.killed, b.done = true, true
	b.mu.Unlock()
	b.rc.Close()
}

func (b *slowBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.killed {
		return n, fmt.Errorf("registry %s is unavailable: fewer than %d bytes received in %s%.0w", b.host, minBodyBytes, b.window, errdefs.ErrUnavailable)
	}
	b.n += int64(n)
	if err != nil && !b.done {
		b.done = true
		b.timer.Stop()
	}
	if err != nil && err != io.EOF {
		err = classify(err, b.host) // a body cut mid-answer: classify.go
	}
	return n, err
}

func (b *slowBody) Close() error {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
	b.timer.Stop()
	return b.rc.Close()
}
