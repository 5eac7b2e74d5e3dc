package distribution

import (
	"context"
	"sync"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// eachBounded moves blobs the way push and copy both do: fn for every
// blob of every pool, at most limit at a time in each pool (copy moves its
// configs in a pool beside the layers'). waiting, when set, is told of a blob that
// must wait for a slot (push's "Waiting"). The first failure cancels stop
// (shared by every pool of one operation): blobs still waiting for a slot
// are not started, but those under way finish — an upload aborted mid-body
// leaves its session open on the registry, and what they complete a retry
// need not move again. fn runs under the caller's own context, not stop.
//
// It returns the error of the first blob, in pool order, that failed by itself,
// not one that was only stopped; stop's error when nothing failed by
// itself but stop ended (the client went away).
func eachBounded(stop context.Context, cancel context.CancelFunc, limit int,
	waiting func(ocispec.Descriptor) error, fn func(ocispec.Descriptor) error, pools ...[]ocispec.Descriptor) error {
	type item struct {
		desc  ocispec.Descriptor
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
		b, slots := it.desc, it.slots
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
			defer func() { <-slots }()
			if err := stop.Err(); err != nil {
				errs[i], stopped[i] = err, true
				return
			}
			if errs[i] = fn(b); errs[i] != nil {
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
