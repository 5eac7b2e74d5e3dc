package transport

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// tokenCache is an auth.Cache that expires bearer tokens. oras-go's
// auth.NewCache keeps a token forever and learns that it expired from a 401
// (stale request + token + retry = 3 trips); this one drops it at expires_in
// (read by challengeMemo) so a refresh costs token + request. One tokenCache
// per credential identity: tokens of different users never mix.
//
// Concurrent callers wanting the same token share one fetch, detached from
// each of them (flight.go): when the client that started it disconnects,
// the others still get the token (issue 10, finding 8).
type tokenCache struct {
	memo    *challengeMemo
	now     func() time.Time
	timeout time.Duration // of one shared fetch: timeouts.shared

	mu      sync.Mutex
	schemes map[string]auth.Scheme
	tokens  *simplelru.LRU[string, cachedToken] // least recently used dropped first
	flight  detachedFlight
}

type cachedToken struct {
	token string
	until time.Time // zero = no known expiry (basic auth)
}

const maxCachedTokens = 4096

func newTokenCache(memo *challengeMemo, timeout time.Duration) *tokenCache {
	return &tokenCache{memo: memo, now: time.Now, timeout: timeout, schemes: map[string]auth.Scheme{}, tokens: mustLRU[string, cachedToken](maxCachedTokens)}
}

func tokenKey(registry string, scheme auth.Scheme, key string) string {
	return registry + " " + scheme.String() + " " + key
}

func (c *tokenCache) GetScheme(_ context.Context, registry string) (auth.Scheme, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.schemes[registry]
	if !ok {
		return auth.SchemeUnknown, errdef.ErrNotFound
	}
	return s, nil
}

func (c *tokenCache) GetToken(_ context.Context, registry string, scheme auth.Scheme, key string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.schemes[registry] != scheme {
		return "", errdef.ErrNotFound
	}
	t, ok := c.tokens.Get(tokenKey(registry, scheme, key))
	if !ok {
		return "", errdef.ErrNotFound
	}
	if !t.until.IsZero() && !c.now().Before(t.until) {
		c.tokens.Remove(tokenKey(registry, scheme, key))
		return "", errdef.ErrNotFound
	}
	return t.token, nil
}

// Set fetches the token for (registry, scheme, key) once for every caller
// asking at the same time, and keeps it. The fetch runs under its own
// context and timeout; the token is stored before the flight ends, so a
// caller that comes a moment later finds it. A caller whose own context
// ends gets an error naming the registry.
func (c *tokenCache) Set(ctx context.Context, registry string, scheme auth.Scheme, key string, fetch func(context.Context) (string, error)) (string, error) {
	k := tokenKey(registry, scheme, key)
	v, err := c.flight.do(ctx, k, c.timeout, func(fctx context.Context) (any, error) {
		token, err := fetch(fctx)
		if err != nil {
			return nil, err
		}
		c.store(registry, scheme, k, token)
		return token, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("registry %s: waiting for a token: %w", registry, err)
		}
		return "", err
	}
	return v.(string), nil
}

func (c *tokenCache) store(registry string, scheme auth.Scheme, k, token string) {
	var until time.Time
	if c.memo != nil && scheme == auth.SchemeBearer {
		until = c.memo.expiry(token)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.schemes[registry]; ok && old != scheme {
		for _, tk := range c.tokens.Keys() {
			if len(tk) > len(registry) && tk[:len(registry)+1] == registry+" " {
				c.tokens.Remove(tk)
			}
		}
	}
	c.schemes[registry] = scheme
	c.tokens.Add(k, cachedToken{token: token, until: until})
}
