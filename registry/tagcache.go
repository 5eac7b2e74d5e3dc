package registry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/imagespec"
)

// The tag freshness cache: what a tag named, and when the registry said
// so. Unlike the content cache it holds an answer that goes stale, so it is
// read only by a caller that says how old an answer it accepts (the update
// check's max-age); every other path asks the registry and only writes
// here. It is keyed like the content cache — registry/repository plus the
// credential identity — so an answer given to one user (or anonymously on
// one registry) is never shown to another: a private tag's digest is itself
// information.

// maxTagAnswers bounds the cache (16,384 answers of ~200 bytes: ~3 MiB);
// beyond, the least recently used go.
const maxTagAnswers = 16384

// TagAnswer is what a registry said a tag names.
type TagAnswer struct {
	// Descriptor is the top level the tag names: digest, media type (as
	// served) and size when known.
	Descriptor ocispec.Descriptor
	// At is when the registry answered.
	At time.Time
	// Cached is true when no request was made (the answer was younger than
	// the max-age asked for).
	Cached bool
}

type tagEntry struct {
	desc    ocispec.Descriptor
	missing bool // the registry said the tag or repository does not exist
	at      time.Time
}

// tagCache is an LRU of tag answers by scope and tag. Its own lock makes
// put's compare-then-replace one step.
type tagCache struct {
	now func() time.Time

	mu      sync.Mutex
	answers *simplelru.LRU[string, tagEntry] // least recently used go first
}

func newTagCache(max int) *tagCache {
	answers, err := simplelru.NewLRU[string, tagEntry](max, nil)
	if err != nil {
		panic(err) // only for max ≤ 0: a constant here
	}
	return &tagCache{now: time.Now, answers: answers}
}

func tagKey(scope, tag string) string { return scope + "\x00" + tag }

// get returns the answer for (scope, tag) when it is younger than maxAge;
// only such a hit counts as a use for the LRU.
func (c *tagCache) get(scope, tag string, maxAge time.Duration) (tagEntry, bool) {
	if maxAge <= 0 {
		return tagEntry{}, false
	}
	k := tagKey(scope, tag)
	c.mu.Lock()
	defer c.mu.Unlock()
	te, ok := c.answers.Peek(k)
	if !ok || c.now().Sub(te.at) >= maxAge {
		return tagEntry{}, false
	}
	c.answers.Get(k)
	return te, true
}

// put records an answer given at time at (an older answer never replaces a
// newer one: two checks may finish out of order).
func (c *tagCache) put(scope, tag string, desc ocispec.Descriptor, missing bool, at time.Time) {
	k := tagKey(scope, tag)
	desc.Data, desc.Annotations, desc.Platform = nil, nil, nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if te, ok := c.answers.Peek(k); ok && te.at.After(at) {
		return
	}
	c.answers.Add(k, tagEntry{desc: desc, missing: missing, at: at})
}

// HeadTag asks what tag names now, with one HEAD (a GET only when the
// registry's HEAD gives no digest), and records the answer in the tag
// freshness cache. With maxAge > 0 an answer this repository's scope got
// less than maxAge ago is returned with no request at all (Cached). A tag
// or repository the registry does not have is errdefs.ErrNotFound — also
// remembered, so that a repeat within maxAge is free for it too; any other
// error is never remembered.
func (r *Repository) HeadTag(ctx context.Context, tag string, maxAge time.Duration) (TagAnswer, error) {
	if !imagespec.ValidTag(tag) {
		return TagAnswer{}, fmt.Errorf("invalid tag %q%.0w", tag, errdefs.ErrInvalidArgument)
	}
	tags := r.svc.tags
	te, ok := tags.get(r.scope(), tag, maxAge)
	if maxAge > 0 {
		r.svc.obs.CacheLookup(CacheTagAnswer, ok)
	}
	if ok {
		if te.missing {
			return TagAnswer{}, fmt.Errorf("%s:%s: not found in the registry (answered %s ago)%.0w",
				r.info.Name.Name(), tag, tags.now().Sub(te.at).Round(time.Millisecond), errdefs.ErrNotFound)
		}
		return TagAnswer{Descriptor: te.desc, At: te.at, Cached: true}, nil
	}
	at := tags.now()
	desc, err := r.Descriptor(ctx, tag)
	switch {
	case err == nil:
		tags.put(r.scope(), tag, desc, false, at)
		return TagAnswer{Descriptor: desc, At: at}, nil
	case errdefs.IsNotFound(err):
		tags.put(r.scope(), tag, ocispec.Descriptor{}, true, at)
	}
	return TagAnswer{}, err
}

// noteTag records what a tag named when another path (pull, remote
// inspect) resolved it, so that a check right after costs nothing when the
// caller allows it.
func (r *Repository) noteTag(tag string, desc ocispec.Descriptor, at time.Time) {
	if tag != "" {
		r.svc.tags.put(r.scope(), tag, desc, false, at)
	}
}
