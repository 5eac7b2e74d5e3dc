package registry

import (
	"container/list"
	"sync"

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

type contentCache struct {
	max int

	mu    sync.Mutex
	size  int
	lru   *list.List // front = most recent; values are *cacheEntry
	index map[digest.Digest]*list.Element
}

type cacheEntry struct {
	dgst      digest.Digest
	mediaType string
	data      []byte
}

func newContentCache(max int) *contentCache {
	return &contentCache{max: max, lru: list.New(), index: map[digest.Digest]*list.Element{}}
}

// get returns verified content and the media type it was served with.
func (c *contentCache) get(d digest.Digest) ([]byte, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.index[d]
	if !ok {
		return nil, "", false
	}
	c.lru.MoveToFront(e)
	ce := e.Value.(*cacheEntry)
	return ce.data, ce.mediaType, true
}

// put stores data, which the caller has verified hashes to d. Callers must
// not modify data afterwards; readers get the same slice.
func (c *contentCache) put(d digest.Digest, mediaType string, data []byte) {
	if len(data) > c.max/4 {
		return // one entry may not flush a quarter of the cache
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.index[d]; ok {
		c.lru.MoveToFront(e)
		return
	}
	c.index[d] = c.lru.PushFront(&cacheEntry{dgst: d, mediaType: mediaType, data: data})
	c.size += len(data)
	for c.size > c.max {
		back := c.lru.Back()
		ce := back.Value.(*cacheEntry)
		c.lru.Remove(back)
		delete(c.index, ce.dgst)
		c.size -= len(ce.data)
	}
}

// repoSet remembers which registry/repository pairs have manifests in the
// content cache: for those, a tag is resolved with HEAD (the body is likely
// cached); for the others, GET by tag answers digest and body in one trip.
type repoSet struct {
	max int

	mu  sync.Mutex
	set map[string]struct{}
}

func newRepoSet(max int) *repoSet { return &repoSet{max: max, set: map[string]struct{}{}} }

func (r *repoSet) add(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.set) >= r.max {
		clear(r.set)
	}
	r.set[k] = struct{}{}
}

func (r *repoSet) has(k string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.set[k]
	return ok
}
