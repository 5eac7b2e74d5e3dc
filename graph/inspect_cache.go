package graph

import (
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/api/types"
)

// inspectCacheEntries bounds the built-inspect cache: 1,024 images' config
// fields, each a few KiB decoded (the config's env, labels, history-derived
// fields), so at most a few MiB. 64 concurrent clients on 64 distinct tags
// (bench case 2) fit many times over.
const inspectCacheEntries = 1024

// inspectCache holds the config-derived part of an inspect answer
// (configInspect) by config digest, so that a warm remote inspect does not
// decode the same config again on every request (decoding was about 8 % of
// wharfd's CPU under 64 clients).
//
// Who may be answered: the key is the digest of the config bytes, which the
// registry client verified, and an entry is only ever read by a caller that
// has just been handed those very bytes by the registry client — which
// served them only after the caller's own scope (registry, repository,
// credentials) was authorised for that digest. The cache therefore tells a
// caller nothing it does not already hold; it saves the decoding, not an
// authorisation.
//
// Entries are shared and must not be modified: configInspect's callers copy
// the top-level struct and only replace fields.
type inspectCache struct {
	entries *lru.Cache[digest.Digest, *types.ImageInspect] // least recently used go first
}

func newInspectCache(max int) *inspectCache {
	c, err := lru.New[digest.Digest, *types.ImageInspect](max)
	if err != nil {
		panic(err) // only for max ≤ 0: a constant here
	}
	return &inspectCache{entries: c}
}

func (c *inspectCache) get(key digest.Digest) (*types.ImageInspect, bool) {
	return c.entries.Get(key)
}

// put keeps an entry already there (another caller built the same one
// first).
func (c *inspectCache) put(key digest.Digest, insp *types.ImageInspect) {
	c.entries.ContainsOrAdd(key, insp)
}

func (c *inspectCache) len() int { return c.entries.Len() }

// buildInspectCached is BuildInspect with the config-derived fields taken
// from the cache when configDigest (the verified digest of src.Config) was
// seen; an empty configDigest bypasses the cache.
func (c *inspectCache) buildInspect(src InspectSource, configDigest digest.Digest) (*types.ImageInspect, error) {
	if configDigest == "" || c == nil {
		return BuildInspect(src)
	}
	base, ok := c.get(configDigest)
	if !ok {
		var err error
		if base, err = configInspect(src.Config); err != nil {
			return nil, err
		}
		c.put(configDigest, base)
	}
	return fillInspect(base, src), nil
}
