package updates

import "sync"

// oncePerKey runs a function once per key and hands every caller of that
// key its answer: what one update-check run shares between the tags it
// checks side by side (a repository's tag listing, a base's answer). The
// zero value is ready to use.
type oncePerKey[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*onceCall[V]
}

type onceCall[V any] struct {
	once sync.Once
	val  V
	err  error
}

// Do returns fn's answer for k, running fn only for the first caller of k;
// the others wait for it.
func (o *oncePerKey[K, V]) Do(k K, fn func() (V, error)) (V, error) {
	o.mu.Lock()
	if o.m == nil {
		o.m = map[K]*onceCall[V]{}
	}
	call, ok := o.m[k]
	if !ok {
		call = &onceCall[V]{}
		o.m[k] = call
	}
	o.mu.Unlock()
	call.once.Do(func() { call.val, call.err = fn() })
	return call.val, call.err
}
