package contents

import (
	"context"
	"sync"
)

// flight runs one build per key at a time and hands its result to every
// caller that asked meanwhile (single flight). The build runs on a context
// of its own: a caller leaving does not cancel the build the others wait
// on; the last one leaving does. golang.org/x/sync/singleflight shares the
// result but not that rule (its function runs on the first caller's
// context).
type flight[V any] struct {
	mu    sync.Mutex
	calls map[string]*call[V]
}

type call[V any] struct {
	done    chan struct{}
	val     V
	err     error
	waiters int
	// cancelled: every caller left and the build was told to stop; a new
	// caller starts a new build rather than join this one.
	cancelled bool
	cancel    context.CancelFunc
}

// do returns fn's result for key, running fn once for all the callers that
// ask while it runs. fn gets a context that keeps ctx's values and ends
// when every caller has left.
func (f *flight[V]) do(ctx context.Context, key string, fn func(context.Context) (V, error)) (V, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]*call[V]{}
	}
	c := f.calls[key]
	if c == nil || c.cancelled {
		bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c = &call[V]{done: make(chan struct{}), cancel: cancel}
		f.calls[key] = c
		go func() {
			defer cancel()
			v, err := fn(bctx)
			f.mu.Lock()
			if f.calls[key] == c {
				delete(f.calls, key)
			}
			c.val, c.err = v, err
			f.mu.Unlock()
			close(c.done)
		}()
	}
	c.waiters++
	f.mu.Unlock()

	select {
	case <-c.done:
		f.mu.Lock()
		c.waiters--
		f.mu.Unlock()
		return c.val, c.err
	case <-ctx.Done():
		f.mu.Lock()
		c.waiters--
		if c.waiters == 0 {
			c.cancelled = true
			c.cancel()
		}
		f.mu.Unlock()
		var zero V
		return zero, ctx.Err()
	}
}
