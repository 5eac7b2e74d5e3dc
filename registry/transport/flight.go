package transport

import (
	"context"
	"time"

	"golang.org/x/sync/singleflight"
)

// detachedFlight runs one call per key for all the callers that ask at the
// same time, under a context of its own: the work is shared, so no one
// caller may cancel it. When the first caller's client disconnects, the
// others waiting on the same token, host set-up or scheme probe must still
// get their answer. The call keeps the first caller's
// context values, is bounded by timeout, and each caller still returns as
// soon as its own context ends.
type detachedFlight struct {
	g singleflight.Group
	// joined, when set (tests only), is called once a caller is part of
	// the flight for key, started or joined.
	joined func(key string)
}

func (f *detachedFlight) do(ctx context.Context, key string, timeout time.Duration, fn func(context.Context) (any, error)) (any, error) {
	ch := f.g.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		return fn(fctx)
	})
	if f.joined != nil {
		f.joined(key)
	}
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case res := <-ch:
		return res.Val, res.Err
	}
}
