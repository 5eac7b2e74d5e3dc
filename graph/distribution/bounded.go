package distribution

import (
	"context"
	"sync"
)

// eachBounded is the one bounded pool of blob transfers: push, copy and
// pull all move their blobs through it (B is a descriptor for push and copy,
// a layer download of its pull for pull). It runs fn for every blob of every
// pool, at most limit at a time in each pool (configs travel in a pool
// beside the layers'). waiting, when set, is told of a blob that must wait
// for a slot (push's and pull's "Waiting"). fn may give its slot back
// before it returns by calling release (pull does once a body is read
// whole, so that the next download starts while this one's last pages are
// fsynced); release is idempotent, and the slot is given back when fn
// returns in any case.
//
// The first failure calls cancel, which push and copy pass to cancel stop
// (shared by every pool of one operation; pull passes a no-op and cancels
// stop itself when a failure is next in layer order):
// blobs still waiting for a slot are not started, but those under way
// finish — an upload aborted mid-body leaves its session open on the
// registry, and what they complete a retry need not move again. fn runs
// under the caller's own context, not stop.
//
// It returns the error of the first blob, in pool order, that failed by itself,
// not one that was only stopped; stop's error when nothing failed by
// itself but stop ended (the client went away).
func eachBounded[B any](stop context.Context, cancel context.CancelFunc, limit int,
	waiting func(B) error, fn func(b B, release func()) error, pools ...[]B) error {
	type item struct {
		blob  B
		slots chan struct{}
	}
	var items []item
	for _, pool := range pools {
		slots := make(chan struct{}, limit)
		for _, b := range pool {
			items = append(items, item{b, slots})
		}
	}
	errs := make([]error, len(items))
	stopped := make([]bool, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		b, slots := it.blob, it.slots
		wg.Add(1)
		go func() {
			defer wg.Done()
			acquire := func() error {
				select {
				case slots <- struct{}{}:
					return nil
				default:
				}
				if waiting != nil {
					if err := waiting(b); err != nil {
						return err
					}
				}
				select {
				case slots <- struct{}{}:
					return nil
				case <-stop.Done():
					stopped[i] = true
					return stop.Err()
				}
			}
			if errs[i] = acquire(); errs[i] != nil {
				if !stopped[i] {
					cancel()
				}
				return
			}
			var once sync.Once
			release := func() { once.Do(func() { <-slots }) }
			defer release()
			if err := stop.Err(); err != nil {
				errs[i], stopped[i] = err, true
				return
			}
			if errs[i] = fn(b, release); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	var first error
	for i, err := range errs {
		if err != nil && !stopped[i] {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}
