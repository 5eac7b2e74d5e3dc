// Package ahead starts a remote read before the registry has answered: on
// the image the same caller's last identical request resolved, while the
// registry is asked again (one HEAD when warm). The read's output is held
// until the registry's answer names the same image, then released; when it
// names another, the read is cancelled, its output dropped, and the read
// runs again on the image just resolved. What a caller receives is always
// what the fresh resolution, with the caller's own credentials, allows.
package ahead

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrStale is what Gate.Wait returns once the fresh resolution named
// another image: the held output must not be released.
var ErrStale = errors.New("ahead: the image changed under the guess")

// Gate stands between a read started on a guess and the caller: closed
// until the fresh resolution settles it.
type Gate struct {
	settled chan struct{}
	ok      bool
	passed  atomic.Bool // output went through to the caller
}

func newGate() *Gate { return &Gate{settled: make(chan struct{})} }

// Open is a gate that is open already: a read on the fresh image.
func Open() *Gate {
	g := newGate()
	g.settle(true)
	return g
}

func (g *Gate) settle(ok bool) {
	g.ok = ok
	close(g.settled)
}

// IsOpen reports without waiting whether output may pass.
func (g *Gate) IsOpen() bool {
	select {
	case <-g.settled:
		return g.ok
	default:
		return false
	}
}

// Wait blocks until the gate is settled: nil when open, ErrStale when the
// guess was wrong, or ctx's error.
func (g *Gate) Wait(ctx context.Context) error {
	select {
	case <-g.settled:
		if g.ok {
			return nil
		}
		return ErrStale
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Pass records that output reached the caller: from then on the read
// cannot be run again without the caller seeing twice.
func (g *Gate) Pass() { g.passed.Store(true) }

// Key names one request: the hash of its parts (the image name, platform
// and credentials), so that the memo holds no secret in the clear.
type Key [sha256.Size]byte

// KeyOf hashes parts, each length-prefixed so that no two lists collide.
func KeyOf(parts ...[]byte) Key {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var k Key
	h.Sum(k[:0])
	return k
}

// Memo is the last image each key resolved: at most budget by weigh's
// count in all; the least recently put is forgotten first, and one
// heavier than the whole budget is not kept.
type Memo[V any] struct {
	mu     sync.Mutex
	weigh  func(V) int
	budget int
	total  int
	m      map[Key]*list.Element // of memoEntry[V]
	order  list.List             // front: the most recently put
}

type memoEntry[V any] struct {
	k Key
	v V
	w int
}

// NewMemo holds images up to budget by weigh's count.
func NewMemo[V any](budget int, weigh func(V) int) *Memo[V] {
	return &Memo[V]{weigh: weigh, budget: budget, m: make(map[Key]*list.Element)}
}

func (m *Memo[V]) get(k Key) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.m[k]; ok {
		return el.Value.(memoEntry[V]).v, true
	}
	var zero V
	return zero, false
}

func (m *Memo[V]) put(k Key, v V) {
	w := m.weigh(v)
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.m[k]; ok {
		m.remove(el)
	}
	if w > m.budget {
		return
	}
	m.m[k] = m.order.PushFront(memoEntry[V]{k, v, w})
	m.total += w
	for m.total > m.budget {
		m.remove(m.order.Back())
	}
}

func (m *Memo[V]) remove(el *list.Element) {
	e := m.order.Remove(el).(memoEntry[V])
	delete(m.m, e.k)
	m.total -= e.w
}

// Run resolves with resolve and reads with read. When m holds a guess for
// k, read starts on it at once behind a closed gate while resolve runs;
// same decides whether the fresh answer is the guessed image. The gate
// opens when it is, and read's result stands, unless read failed before
// any output passed (a failure of the guess's own, such as its token),
// when read runs again on the fresh image. Otherwise the guessed read is
// cancelled and waited for, and read runs on the fresh image behind an
// open gate. Without a guess it is resolve, then read.
func Run[V any](ctx context.Context, m *Memo[V], k Key, same func(guess, fresh V) bool,
	resolve func(context.Context) (V, error), read func(context.Context, V, *Gate) error) error {
	guess, ok := m.get(k)
	if !ok {
		v, err := resolve(ctx)
		if err != nil {
			return err
		}
		m.put(k, v)
		return read(ctx, v, Open())
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := newGate()
	done := make(chan error, 1)
	go func() { done <- read(gctx, guess, g) }()

	fresh, err := resolve(ctx)
	if err == nil && same(guess, fresh) {
		m.put(k, fresh)
		g.settle(true)
		rerr := <-done
		if rerr == nil || g.passed.Load() || ctx.Err() != nil {
			return rerr
		}
		return read(ctx, fresh, Open())
	}
	g.settle(false)
	cancel()
	<-done
	if err != nil {
		return err
	}
	m.put(k, fresh)
	return read(ctx, fresh, Open())
}
