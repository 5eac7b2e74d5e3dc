package registry

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/containerd/errdefs"
)

// TimeoutEnv, when set to a Go duration (e.g. "2s"), replaces the response
// header timeout and the slow-body window (both 30 s by default) and caps
// the dial timeout. It exists so the hostile-registry tests can meet a
// silent or trickling registry in seconds; a daemon flag would be the
// production knob.
const TimeoutEnv = "WHARF_REGISTRY_TIMEOUT"

// timeouts bound every wait on a registry.
type timeouts struct {
	dial   time.Duration // TCP connect
	header time.Duration // request sent → response headers
	// window is the slow-body rule: a response body that delivers fewer
	// than minBodyBytes in any window is abandoned. A dead connection and
	// one trickling a byte a second both end within one window.
	window time.Duration
}

// minBodyBytes per window: 1 KiB in 30 s is 34 B/s, far below any real
// link, and far above a registry that trickles a byte a second.
const minBodyBytes = 1 << 10

func defaultTimeouts() timeouts {
	return timeouts{dial: dialTimeout, header: responseHeaderTimeout, window: blobIdleTimeout}
}

// timeoutsFromEnv applies TimeoutEnv to the defaults.
func timeoutsFromEnv(getenv func(string) string) (timeouts, error) {
	t := defaultTimeouts()
	v := getenv(TimeoutEnv)
	if v == "" {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return t, fmt.Errorf("%s=%q is not a positive duration", TimeoutEnv, v)
	}
	t.header, t.window = d, d
	t.dial = min(t.dial, d)
	return t, nil
}

func envTimeouts() (timeouts, error) { return timeoutsFromEnv(os.Getenv) }

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
	return n, err
}

func (b *slowBody) Close() error {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
	b.timer.Stop()
	return b.rc.Close()
}
