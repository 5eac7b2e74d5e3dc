package registry

import (
	"time"

	"github.com/wharfproject/wharf/registry/transport"
)

// Observer is told of registry traffic and cache use; the daemon's metrics
// implement it (ServiceOptions.Observer). Its methods run on every request,
// so they must be cheap and safe for concurrent use. host is the
// registry's host[:port] as requests name it: bounded by the names users
// pull, so an implementation that exports it as a label must cap it.
//
// It is transport.Observer: the transport reports the requests and the
// token look-ups, this package the tag and digest caches.
type Observer = transport.Observer

// Outcomes of a registry request.
const (
	OutcomeOK           = transport.OutcomeOK           // an answer below 400
	OutcomeHTTPError    = transport.OutcomeHTTPError    // an answer of 400 or more (a 401 challenge included)
	OutcomeNetworkError = transport.OutcomeNetworkError // no answer: refused, reset, timed out, TLS failed
	OutcomeCanceled     = transport.OutcomeCanceled     // no answer because the caller gave up
)

// The caches of CacheLookup.
const (
	// CacheTag: a tag of a repository this identity has read is resolved
	// with HEAD, its body likely in the content cache (hit); otherwise
	// with one GET (miss).
	CacheTag = "tag"
	// CacheTagAnswer: the tag freshness cache (tagcache.go), looked up only
	// by a caller that accepts an answer up to a max-age old (the update
	// check): a hit costs no request at all.
	CacheTagAnswer = "tag_answer"
	// CacheDigest: manifests and configs by digest (cache.go).
	CacheDigest = "digest"
	// CacheToken: bearer and basic tokens per identity (transport/tokencache.go).
	CacheToken = transport.CacheToken
	// CacheBlobLocation: a range read of a blob whose store redirect is
	// remembered goes straight to the store (hit), else through the
	// registry (miss; registry/blobs locations.go).
	CacheBlobLocation = "blob_location"
)

// nopObserver is the Observer of a Service without one.
type nopObserver struct{}

func (nopObserver) RegistryRequest(string, string, int, string, time.Duration) {}
func (nopObserver) CacheLookup(string, bool)                                   {}

// observer is o, or one that does nothing.
func observer(o Observer) Observer {
	if o == nil {
		return nopObserver{}
	}
	return o
}

// setObserver hands o to the parts of s that report.
func (s *Service) setObserver(o Observer) {
	s.obs = observer(o)
	s.content.obs = s.obs
	obs := s.obs
	s.stores.SetObserver(func(hit bool) { obs.CacheLookup(CacheBlobLocation, hit) })
}

// tagWarm reports whether a tag of scope's repository is resolved with
// HEAD (its documents likely cached), and counts the look-up.
func (s *Service) tagWarm(scope string) bool {
	ok := s.warm.has(scope)
	s.obs.CacheLookup(CacheTag, ok)
	return ok
}

// observe counts a look-up in the content cache.
func (c *contentCache) observe(found bool) {
	if c.obs != nil {
		c.obs.CacheLookup(CacheDigest, found)
	}
}
