package contents

import (
	"container/list"
	"sync"
)

// memCache is a least-recently-used map bounded by the sum of its values'
// costs (an estimate of their heap), not by their count: one layer's index
// may cost 100 MiB and another's 10 KiB.
type memCache[K comparable, V any] struct {
	mu     sync.Mutex
	budget int64
	used   int64
	lru    *list.List
	items  map[K]*list.Element
}

type memItem[K comparable, V any] struct {
	key  K
	val  V
	cost int64
}

func newMemCache[K comparable, V any](budget int64) *memCache[K, V] {
	return &memCache[K, V]{budget: budget, lru: list.New(), items: map[K]*list.Element{}}
}

func (m *memCache[K, V]) get(k K) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.items[k]; ok {
		m.lru.MoveToFront(el)
		return el.Value.(*memItem[K, V]).val, true
	}
	var zero V
	return zero, false
}

// add keeps v unless it alone is over the budget, then evicts the least
// recently used until the rest fits.
func (m *memCache[K, V]) add(k K, v V, cost int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.items[k]; ok {
		m.used -= el.Value.(*memItem[K, V]).cost
		m.lru.Remove(el)
		delete(m.items, k)
	}
	if cost > m.budget {
		return
	}
	m.items[k] = m.lru.PushFront(&memItem[K, V]{k, v, cost})
	m.used += cost
	for m.used > m.budget {
		it := m.lru.Remove(m.lru.Back()).(*memItem[K, V])
		delete(m.items, it.key)
		m.used -= it.cost
	}
}
