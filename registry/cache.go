package registry

import (
	"container/list"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/opencontainers/go-digest"
)

// contentCacheBytes bounds the in-memory content cache. Manifests and
// configs are a few KiB each, so 64 MiB holds tens of thousands of images'
// metadata while staying small beside the daemon. Content is addressed by
// digest and verified before it goes in, so it is safe forever: only
// capacity evicts it.
const contentCacheBytes = 64 << 20

// maxWarmRepos bounds the set of repositories whose manifests are cached.
const maxWarmRepos = 4096

// contentCache holds verified manifests and configs by digest, and for each
// the scopes that may be served it: a scope is registry/repository plus the
// credential identity (anonymous included) that read it there. Content is
// immutable, but access to it is not: a digest read in a private repository
// must not answer a request for another repository, another registry or
// another user without asking the registry (one HEAD) first.
type contentCache struct {
	max int

	mu    sync.Mutex
	size  int
	lru   *list.List // front = most recent; values are *cacheEntry
	index map[digest.Digest]*list.Element

	obs Observer // metrics.go; nil = none
}

// maxScopesPerEntry bounds the scopes remembered per digest (64): beyond,
// the set starts again, and a forgotten scope costs one HEAD.
const maxScopesPerEntry = 64

type cacheEntry struct {
	dgst      digest.Digest
	mediaType string
	data      []byte
	scopes    map[string]struct{}
	docs      map[string]*decoded // by media type decoded as (doccache.go)
	docBytes  int                 // what docs are charged in size
}

func newContentCache(max int) *contentCache {
	return &contentCache{max: max, lru: list.New(), index: map[digest.Digest]*list.Element{}}
}

// get returns verified content, the media type it was served with, and
// whether scope may be served it without asking the registry.
func (c *contentCache) get(d digest.Digest, scope string) (data []byte, mediaType string, ok, authorized bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.index[d]
	c.observe(ok)
	if !ok {
		return nil, "", false, false
	}
	c.lru.MoveToFront(e)
	ce := e.Value.(*cacheEntry)
	_, authorized = ce.scopes[scope]
	return ce.data, ce.mediaType, true, authorized
}

// authorize records that scope has been shown to have d (the registry
// answered for it, or it is part of a document scope read).
func (c *contentCache) authorize(d digest.Digest, scope string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.index[d]; ok {
		e.Value.(*cacheEntry).addScope(scope)
	}
}

func (ce *cacheEntry) addScope(scope string) {
	if len(ce.scopes) >= maxScopesPerEntry {
		clear(ce.scopes)
	}
	ce.scopes[scope] = struct{}{}
}

// put stores data, which the caller has verified hashes to d and read in
// scope. Callers must not modify data afterwards; readers get the same slice.
func (c *contentCache) put(d digest.Digest, mediaType string, data []byte, scope string) {
	if len(data) > c.max/4 {
		return // one entry may not flush a quarter of the cache
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.index[d]; ok {
		c.lru.MoveToFront(e)
		e.Value.(*cacheEntry).addScope(scope)
		return
	}
	ce := &cacheEntry{dgst: d, mediaType: mediaType, data: data, scopes: map[string]struct{}{scope: {}}}
	c.index[d] = c.lru.PushFront(ce)
	c.size += len(data)
	c.evict()
}

// evict drops the least recent entries until the cache fits. Called with
// c.mu held.
func (c *contentCache) evict() {
	for c.size > c.max {
		back := c.lru.Back()
		ce := back.Value.(*cacheEntry)
		c.lru.Remove(back)
		delete(c.index, ce.dgst)
		c.size -= len(ce.data) + ce.docBytes
	}
}

// repoSet remembers which registry/repository pairs have manifests in the
// content cache: for those, a tag is resolved with HEAD (the body is likely
// cached); for the others, GET by tag answers digest and body in one trip.
type repoSet = lruSet

func newRepoSet(max int) *repoSet { return newLRUSet(max) }

// lruSet is a set of strings bounded by count, the least recently used
// forgotten first (golang-lru). Safe for concurrent use.
type lruSet struct{ c *lru.Cache[string, struct{}] }

func newLRUSet(max int) *lruSet {
	c, err := lru.New[string, struct{}](max)
	if err != nil {
		panic(err) // max is a positive constant
	}
	return &lruSet{c: c}
}

func (s *lruSet) add(k string) { s.c.Add(k, struct{}{}) }

func (s *lruSet) has(k string) bool {
	_, ok := s.c.Get(k)
	return ok
}

// mustLRU is a simplelru (the caller holds its own lock) of a positive
// constant size.
func mustLRU[K comparable, V any](size int) *simplelru.LRU[K, V] {
	c, err := simplelru.NewLRU[K, V](size, nil)
	if err != nil {
		panic(err)
	}
	return c
}
