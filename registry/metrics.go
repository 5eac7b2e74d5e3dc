package registry

import (
	"context"
	"net/http"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"
)

// Observer is told of registry traffic and cache use; the daemon's metrics
// implement it (ServiceOptions.Observer). Its methods run on every request,
// so they must be cheap and safe for concurrent use. host is the
// registry's host[:port] as requests name it: bounded by the names users
// pull, so an implementation that exports it as a label must cap it.
type Observer interface {
	// RegistryRequest is one HTTP exchange with a registry or token
	// server (every attempt: retries count again), d its time to the
	// response headers. status is 0 when there was no answer.
	RegistryRequest(host, method string, status int, outcome string, d time.Duration)
	// CacheLookup is one look-up in cache CacheTag, CacheDigest or CacheToken.
	CacheLookup(cache string, hit bool)
}

// Outcomes of a registry request.
const (
	OutcomeOK           = "ok"            // an answer below 400
	OutcomeHTTPError    = "http_error"    // an answer of 400 or more (a 401 challenge included)
	OutcomeNetworkError = "network_error" // no answer: refused, reset, timed out, TLS failed
	OutcomeCanceled     = "canceled"      // no answer because the caller gave up
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
	// CacheToken: bearer and basic tokens per identity (tokencache.go).
	CacheToken = "token"
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
	s.transports().obs = s.obs // and Reload's (reload.go)
	s.content.obs = s.obs
}

// roundTrip sends req through host e's transport and reports it: the one
// place every registry request passes (manifests, blobs, uploads, tokens,
// pings), below the retries, so each attempt is counted as the registry
// sees it.
func (t *hostTransports) roundTrip(e *hostEntry, req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := e.rt.RoundTrip(req)
	o := t.obs
	if o == nil {
		return resp, err
	}
	d := time.Since(start)
	switch {
	case err != nil && req.Context().Err() != nil:
		o.RegistryRequest(e.host, req.Method, 0, OutcomeCanceled, d)
	case err != nil:
		o.RegistryRequest(e.host, req.Method, 0, OutcomeNetworkError, d)
	case resp.StatusCode >= 400:
		o.RegistryRequest(e.host, req.Method, resp.StatusCode, OutcomeHTTPError, d)
	default:
		o.RegistryRequest(e.host, req.Method, resp.StatusCode, OutcomeOK, d)
	}
	return resp, err
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

// observedTokens counts the token look-ups oras-go's auth.Client makes
// before each request: a hit is a token still valid for the scope.
type observedTokens struct {
	*tokenCache
	obs Observer
}

func (s *Service) observedTokens(c *tokenCache) auth.Cache {
	if _, nop := s.obs.(nopObserver); nop {
		return c
	}
	return observedTokens{c, s.obs}
}

func (o observedTokens) GetToken(ctx context.Context, registry string, scheme auth.Scheme, key string) (string, error) {
	t, err := o.tokenCache.GetToken(ctx, registry, scheme, key)
	o.obs.CacheLookup(CacheToken, err == nil)
	return t, err
}
