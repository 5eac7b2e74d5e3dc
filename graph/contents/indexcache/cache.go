// Package indexcache keeps layer indexes on disk, one file per layer digest,
// under a byte budget of its own: the least recently used go first.
//
//	<data-root>/wharf/layerindex/      0700
//	└── sha256/
//	    └── <hex>                      the index of layer sha256:<hex>
//	                                   (codec.go); its mtime is its last use
//
// A file is written atomically (internal/atomicfile) and read under caps
// (layerindex.Limits, gzindex.MaxEncodedSize); one that does not decode is
// removed, and the index is built again. An index is keyed by the layer's
// digest only: whoever asks must already have been allowed to read the layer
// (graph/contents resolves a remote image with the caller's credentials
// before it asks).
package indexcache

import (
	"container/list"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/internal/atomicfile"
	"github.com/wharfproject/wharf/internal/layerindex"
)

// DefaultBudget is the disk the indexes may use when the daemon sets none:
// 1 GiB. An index costs about 0.3–2 % of its layer's uncompressed size
// (entries plus gzip checkpoints every 4 MiB), so 1 GiB holds the indexes of
// 50–300 GiB of layers: every image a workstation or a CI runner looks at.
const DefaultBudget = 1 << 30

// ErrNotFound is a digest the cache does not hold.
var ErrNotFound = fmt.Errorf("layer index not cached%.0w", errdefs.ErrNotFound)

// Cache is the directory of indexes. It is safe for concurrent use.
type Cache struct {
	dir     string
	lim     layerindex.Limits
	onUse   func(files int, bytes int64)
	onEvict func()

	mu     sync.Mutex
	budget int64
	used   int64
	lru    *list.List // of *item, most recently used at the front
	items  map[digest.Digest]*list.Element
	write  sync.Mutex // one writer at a time: atomicfile's temp name is fixed per path

	touchEvery time.Duration // touchEvery; tests set 0
}

type item struct {
	d       digest.Digest
	size    int64
	touched time.Time // the mtime last set
}

// touchEvery is how stale a file's mtime may get before a use sets it
// again: a minute, so that a busy index costs one utimes a minute, not
// one per request, and a restart still finds the order within a minute.
const touchEvery = time.Minute

// Options configure a Cache.
type Options struct {
	// Budget is the bytes the files may use; <= 0: DefaultBudget.
	Budget int64
	// Limits cap what a file may decode to.
	Limits layerindex.Limits
	// OnUsage is told the files and bytes after every change; OnEvict of
	// every file evicted for the budget. Either may be nil.
	OnUsage func(files int, bytes int64)
	OnEvict func()
}

// Open scans dir (creating it) and evicts what is over the budget, oldest
// first by the files' mtimes.
func Open(dir string, opts Options) (*Cache, error) {
	c := &Cache{dir: dir, lim: opts.Limits, onUse: opts.OnUsage, onEvict: opts.OnEvict, lru: list.New(), items: map[digest.Digest]*list.Element{}, touchEvery: touchEvery}
	c.budget = budgetOrDefault(opts.Budget)
	if err := os.MkdirAll(filepath.Join(dir, string(digest.SHA256)), 0o700); err != nil {
		return nil, err
	}
	type found struct {
		item
		mtime time.Time
	}
	var all []found
	ents, err := os.ReadDir(filepath.Join(dir, string(digest.SHA256)))
	if err != nil {
		return nil, err
	}
	for _, de := range ents {
		d := digest.NewDigestFromEncoded(digest.SHA256, de.Name())
		info, err := de.Info()
		if err != nil || !de.Type().IsRegular() || d.Validate() != nil {
			// A temp file a crash left, or something not ours.
			_ = os.Remove(filepath.Join(dir, string(digest.SHA256), de.Name()))
			continue
		}
		all = append(all, found{item{d: d, size: info.Size()}, info.ModTime()})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mtime.After(all[j].mtime) })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range all {
		it := f.item
		it.touched = f.mtime
		c.items[it.d] = c.lru.PushBack(&it)
		c.used += it.size
	}
	c.evictLocked()
	return c, nil
}

func budgetOrDefault(n int64) int64 {
	if n <= 0 {
		return DefaultBudget
	}
	return n
}

func (c *Cache) path(d digest.Digest) string {
	return filepath.Join(c.dir, string(d.Algorithm()), d.Encoded())
}

// Get reads the index of layer d: ErrNotFound when the cache holds none (or
// held one that did not decode, now removed).
func (c *Cache) Get(d digest.Digest) (*Entry, error) {
	if d.Validate() != nil || d.Algorithm() != digest.SHA256 {
		return nil, ErrNotFound
	}
	c.mu.Lock()
	el, ok := c.items[d]
	if ok {
		c.lru.MoveToFront(el)
	}
	c.mu.Unlock()
	if !ok {
		return nil, ErrNotFound
	}
	p := c.path(d)
	f, err := os.Open(p)
	if err != nil {
		c.forget(d)
		return nil, ErrNotFound
	}
	defer f.Close()
	e, err := decode(f, c.lim)
	if err == nil && e.Index.Layer != d {
		err = fmt.Errorf("%w: file of %s holds %s", ErrCorrupt, d, e.Index.Layer)
	}
	if err != nil {
		c.Remove(d)
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	c.Touch(d)
	return e, nil
}

// Touch marks d used now (a use answered from a decoded copy in memory
// counts too): first in line to stay, and its mtime, the order a restart
// reads, set again when it is older than touchEvery.
func (c *Cache) Touch(d digest.Digest) {
	now := time.Now()
	c.mu.Lock()
	el, ok := c.items[d]
	var stale bool
	if ok {
		c.lru.MoveToFront(el)
		it := el.Value.(*item)
		if stale = now.Sub(it.touched) >= c.touchEvery; stale {
			it.touched = now
		}
	}
	c.mu.Unlock()
	if stale {
		_ = os.Chtimes(c.path(d), now, now)
	}
}

// Put writes the index of e.Index.Layer, then evicts what is over the
// budget, least recently used first (the new file last).
func (c *Cache) Put(e *Entry) error {
	d := e.Index.Layer
	if err := d.Validate(); err != nil || d.Algorithm() != digest.SHA256 {
		return fmt.Errorf("layer index cache: key %q: %w", d, errdefs.ErrInvalidArgument)
	}
	b, err := encode(e)
	if err != nil {
		return err
	}
	c.write.Lock()
	err = atomicfile.WriteFile(c.path(d), b, 0o600)
	c.write.Unlock()
	if err != nil {
		return err
	}
	c.mu.Lock()
	if el, ok := c.items[d]; ok {
		c.used -= el.Value.(*item).size
		c.lru.Remove(el)
	}
	c.items[d] = c.lru.PushFront(&item{d: d, size: int64(len(b)), touched: time.Now()})
	c.used += int64(len(b))
	c.evictLocked()
	c.mu.Unlock()
	return nil
}

// Has reports whether d is cached, without touching its place.
func (c *Cache) Has(d digest.Digest) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.items[d]
	return ok
}

// Remove deletes the index of d.
func (c *Cache) Remove(d digest.Digest) {
	c.forget(d)
	if err := os.Remove(c.path(d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return
	}
}

func (c *Cache) forget(d digest.Digest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[d]; ok {
		c.used -= el.Value.(*item).size
		c.lru.Remove(el)
		delete(c.items, d)
		c.reportLocked()
	}
}

// SetBudget changes the budget (a configuration reload) and evicts at once.
func (c *Cache) SetBudget(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget = budgetOrDefault(n)
	c.evictLocked()
}

// Usage is the files and bytes the cache holds.
func (c *Cache) Usage() (files int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.used
}

// Budget is the budget in force.
func (c *Cache) Budget() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.budget
}

func (c *Cache) evictLocked() {
	for c.used > c.budget && c.lru.Len() > 0 {
		it := c.lru.Remove(c.lru.Back()).(*item)
		delete(c.items, it.d)
		c.used -= it.size
		_ = os.Remove(c.path(it.d))
		if c.onEvict != nil {
			c.onEvict()
		}
	}
	c.reportLocked()
}

func (c *Cache) reportLocked() {
	if c.onUse != nil {
		c.onUse(len(c.items), c.used)
	}
}
