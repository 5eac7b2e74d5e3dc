package transport

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// tokenCache holds the tokens of one credential identity (tokens of
// different users never mix): per registry host the scheme it wants, and
// per (host, scheme, scope set) a token until its expires_in (minus
// tokenExpiryMargin), so a renewal costs token + request, not a 401 first.
//
// Concurrent callers wanting the same token share one fetch, detached from
// each of them (flight.go): when the client that started it disconnects,
// the others still get the token.
type tokenCache struct {
	now     func() time.Time
	timeout time.Duration // of one shared fetch: timeouts.shared
	obs     Observer      // told of every look-up; nil = none

	mu      sync.Mutex
	schemes map[string]string                   // host → "basic" or "bearer"
	tokens  *simplelru.LRU[string, cachedToken] // least recently used dropped first
	flight  detachedFlight
}

type cachedToken struct {
	token string
	until time.Time // zero = no known expiry (basic auth, a registry token)
}

const maxCachedTokens = 4096

// The schemes a tokenCache keeps tokens of.
const (
	schemeBasic  = "basic"
	schemeBearer = "bearer"
)

func newTokenCache(timeout time.Duration, obs Observer) *tokenCache {
	return &tokenCache{now: time.Now, timeout: timeout, obs: obs, schemes: map[string]string{}, tokens: mustLRU[string, cachedToken](maxCachedTokens)}
}

func tokenKey(host, scheme, key string) string {
	return host + " " + scheme + " " + key
}

// scheme is the scheme host's last token was for.
func (c *tokenCache) scheme(host string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.schemes[host]
	return s, ok
}

// get is the token for (host, scheme, scope key) while it is valid; each
// look-up is reported to the observer (CacheToken).
func (c *tokenCache) get(host, scheme, key string) (string, bool) {
	tok, ok := c.lookup(host, scheme, key)
	if c.obs != nil {
		c.obs.CacheLookup(CacheToken, ok)
	}
	return tok, ok
}

func (c *tokenCache) lookup(host, scheme, key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.schemes[host] != scheme {
		return "", false
	}
	k := tokenKey(host, scheme, key)
	t, ok := c.tokens.Get(k)
	if !ok {
		return "", false
	}
	if !t.until.IsZero() && !c.now().Before(t.until) {
		c.tokens.Remove(k)
		return "", false
	}
	return t.token, true
}

// fetched is a token fetch's answer: lifetime 0 means no known expiry.
type fetched struct {
	token    string
	lifetime time.Duration
}

// fetch gets the token for (host, scheme, key) once for every caller
// asking at the same time, and keeps it. The fetch runs under its own
// context and timeout; the token is stored before the flight ends, so a
// caller that comes a moment later finds it. A caller whose own context
// ends gets an error naming the registry. store false (a same-host HTTPS
// upgrade, whose scheme the keys do not tell apart) keeps nothing.
func (c *tokenCache) fetch(ctx context.Context, host, scheme, key string, store bool, fn func(context.Context) (fetched, error)) (string, error) {
	k := tokenKey(host, scheme, key)
	if !store {
		k = "upgrade " + k
	}
	v, err := c.flight.do(ctx, k, c.timeout, func(fctx context.Context) (any, error) {
		f, err := fn(fctx)
		if err != nil {
			return nil, err
		}
		if store {
			c.store(host, scheme, key, f)
		}
		return f.token, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("registry %s: waiting for a token: %w", host, err)
		}
		return "", err
	}
	return v.(string), nil
}

func (c *tokenCache) store(host, scheme, key string, f fetched) {
	var until time.Time
	if f.lifetime > 0 {
		// issued_at is the server's clock; counting from our own receipt
		// time is never later than the truth by more than the trip.
		until = c.now().Add(f.lifetime - tokenExpiryMargin)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.schemes[host]; ok && old != scheme {
		for _, tk := range c.tokens.Keys() {
			if len(tk) > len(host) && tk[:len(host)+1] == host+" " {
				c.tokens.Remove(tk)
			}
		}
	}
	c.schemes[host] = scheme
	c.tokens.Add(tokenKey(host, scheme, key), cachedToken{token: f.token, until: until})
}
