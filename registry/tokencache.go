package registry

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// tokenCache is an auth.Cache that expires bearer tokens. oras-go's
// auth.NewCache keeps a token forever and learns that it expired from a 401
// (stale request + token + retry = 3 trips); this one drops it at expires_in
// (read by challengeMemo) so a refresh costs token + request. One tokenCache
// per credential identity: tokens of different users never mix.
type tokenCache struct {
	memo *challengeMemo
	now  func() time.Time

	mu      sync.Mutex
	schemes map[string]auth.Scheme
	tokens  map[string]cachedToken
	flight  singleflight.Group
}

type cachedToken struct {
	token string
	until time.Time // zero = no known expiry (basic auth)
}

const maxCachedTokens = 4096

func newTokenCache(memo *challengeMemo) *tokenCache {
	return &tokenCache{memo: memo, now: time.Now, schemes: map[string]auth.Scheme{}, tokens: map[string]cachedToken{}}
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
	t, ok := c.tokens[tokenKey(registry, scheme, key)]
	if !ok {
		return "", errdef.ErrNotFound
	}
	if !t.until.IsZero() && !c.now().Before(t.until) {
		delete(c.tokens, tokenKey(registry, scheme, key))
		return "", errdef.ErrNotFound
	}
	return t.token, nil
}

func (c *tokenCache) Set(ctx context.Context, registry string, scheme auth.Scheme, key string, fetch func(context.Context) (string, error)) (string, error) {
	k := tokenKey(registry, scheme, key)
	v, err, _ := c.flight.Do(k, func() (any, error) {
		return fetch(ctx)
	})
	if err != nil {
		return "", err
	}
	token := v.(string)
	var until time.Time
	if c.memo != nil && scheme == auth.SchemeBearer {
		until = c.memo.expiry(token)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.schemes[registry]; ok && old != scheme {
		for tk := range c.tokens {
			if len(tk) > len(registry) && tk[:len(registry)+1] == registry+" " {
				delete(c.tokens, tk)
			}
		}
	}
	c.schemes[registry] = scheme
	if len(c.tokens) >= maxCachedTokens {
		now := c.now()
		for tk, t := range c.tokens {
			if !t.until.IsZero() && !now.Before(t.until) {
				delete(c.tokens, tk)
			}
		}
		if len(c.tokens) >= maxCachedTokens {
			clear(c.tokens)
		}
	}
	c.tokens[k] = cachedToken{token: token, until: until}
	return token, nil
}
