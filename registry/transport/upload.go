package transport

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/containerd/errdefs"
)

// uploadGuard is the slow-body rule for what wharfd sends (timeouts.go):
// a request body — a blob or manifest upload — of which the registry takes
// nothing for a whole window ends the request, naming the registry.
// Without it a registry that stops reading an upload holds a push forever:
// the write blocks once the socket buffers are full, and the
// response-header timeout only starts when the request is fully written.
//
// The guard sees what the transport takes from the body. net/http copies
// a body in pieces of up to 32 KiB and takes the next piece only when the
// connection has accepted the last one, so once the socket buffers are
// full "nothing taken in a window" means the registry accepted less than
// 32 KiB in it: about 1 KiB/s with the 30 s default, far below any real
// link, and a registry that reads a byte a second is caught in one window.
// (Counting bytes as the download rule does would need a cap on each piece:
// 1 KiB writes cost a push 32 times the system calls.)
//
// When the body is spent, the answer must come within the response-header
// timeout (the last piece may still sit in a blocked write, so net/http's
// own timeout may not have started). The request is ended by cancelling its
// context, which closes the connection and unblocks the write.
type uploadGuard struct {
	body   io.ReadCloser
	host   string
	tm     timeouts
	cancel context.CancelCauseFunc
	timer  *time.Timer

	mu      sync.Mutex
	n       int64     // bytes taken since the last tick
	spentAt time.Time // when the body reached its end; zero before
	done    bool      // answered (or failed): the timer is stopped for good
	stalled error     // why the guard ended the request
}

// guardUpload returns req with its body counted and a context the guard
// may cancel.
func guardUpload(req *http.Request, tm timeouts) (*http.Request, *uploadGuard) {
	ctx, cancel := context.WithCancelCause(req.Context())
	g := &uploadGuard{body: req.Body, host: req.URL.Host, tm: tm, cancel: cancel}
	out := req.WithContext(ctx)
	out.Body = &guardedBody{g: g}
	g.timer = time.AfterFunc(tm.window, g.tick)
	return out, g
}

type guardedBody struct{ g *uploadGuard }

func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.g.body.Read(p)
	b.g.mu.Lock()
	b.g.n += int64(n)
	if err != nil && b.g.spentAt.IsZero() {
		b.g.spentAt = time.Now()
	}
	b.g.mu.Unlock()
	return n, err
}

func (b *guardedBody) Close() error { return b.g.body.Close() }

func (g *uploadGuard) tick() {
	g.mu.Lock()
	switch {
	case g.done:
		g.mu.Unlock()
		return
	case !g.spentAt.IsZero():
		if wait := g.tm.header - time.Since(g.spentAt); wait > 0 {
			g.timer.Reset(wait)
			g.mu.Unlock()
			return
		}
		g.stalled = fmt.Errorf("registry %s is unavailable: no answer within %s of the end of the upload%.0w", g.host, g.tm.header, errdefs.ErrUnavailable)
	case g.n > 0:
		g.n = 0
		g.timer.Reset(g.tm.window)
		g.mu.Unlock()
		return
	default:
		g.stalled = fmt.Errorf("registry %s is unavailable: it stopped reading the upload (nothing taken in %s)%.0w", g.host, g.tm.window, errdefs.ErrUnavailable)
	}
	g.done = true
	err := g.stalled
	g.mu.Unlock()
	g.cancel(err)
}

// answered ends the guard when the response headers (or an error) came
// back: from here the slow-body rule of the response takes over. A
// transport error caused by the guard is replaced by the guard's reason.
// The request's context lives until the response body is closed.
func (g *uploadGuard) answered(resp *http.Response, err error) (*http.Response, error) {
	g.mu.Lock()
	g.done = true
	stalled := g.stalled
	g.mu.Unlock()
	g.timer.Stop()
	if stalled != nil || err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		g.cancel(nil)
		if stalled != nil {
			return nil, stalled
		}
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: g.cancel}
	return resp, nil
}

// cancelOnClose releases a request's context with its response body.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel(nil)
	return err
}
