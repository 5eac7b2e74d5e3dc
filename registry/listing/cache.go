package listing

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// The tag listing freshness cache: the whole listing of a
// repository, and when the registry gave it, for the newer-version check.
// Like the tag freshness cache (registry's tagcache.go) it is read only by a caller
// that says how old an answer it accepts (the check's max-age), and it is
// keyed by the repository's scope — registry/repository plus the
// credential identity — so a private listing is never shown to another
// identity. It is process-wide (keyed by scope, an answer does not depend
// on which Service asked), bounded by maxTagListings entries; a listing
// is capped by the listing's own bounds (tags.go, Limit).

// maxTagListings bounds the listing cache (repositories).
const maxTagListings = 1024

type listingEntry struct {
	tags []string
	at   time.Time
}

var tagListings = struct {
	mu sync.Mutex
	m  *simplelru.LRU[string, listingEntry]
}{m: func() *simplelru.LRU[string, listingEntry] {
	l, err := simplelru.NewLRU[string, listingEntry](maxTagListings, nil)
	if err != nil {
		panic(err)
	}
	return l
}()}

// TagListing is a repository's whole tag listing.
type TagListing struct {
	Tags []string
	// At is when the registry gave the listing.
	At time.Time
	// Cached: no request was made (younger than the max-age asked for).
	Cached bool
}

// Whole is a repository's whole tag listing through the cache: key is the
// repository's scope (registry/repository and the credential identity);
// with maxAge > 0 a listing this key got less than maxAge ago is returned
// with no request at all, else list is asked (Tags, every page) and its
// answer remembered. Errors are never remembered. The caller must not
// modify Tags.
func Whole(ctx context.Context, key string, maxAge time.Duration, list func(context.Context) ([]string, error)) (TagListing, error) {
	if maxAge > 0 {
		tagListings.mu.Lock()
		e, ok := tagListings.m.Get(key)
		tagListings.mu.Unlock()
		if ok && time.Since(e.at) < maxAge {
			return TagListing{Tags: e.tags, At: e.at, Cached: true}, nil
		}
	}
	at := time.Now()
	tags, err := list(ctx)
	if err != nil {
		return TagListing{}, err
	}
	tags = slices.Clip(tags)
	tagListings.mu.Lock()
	if e, ok := tagListings.m.Peek(key); !ok || !e.at.After(at) {
		tagListings.m.Add(key, listingEntry{tags: tags, at: at})
	}
	tagListings.mu.Unlock()
	return TagListing{Tags: tags, At: at}, nil
}
