// Package transport is wharf's one HTTP stack to registries: every request
// of package registry — manifests, blobs, uploads, tokens, pings, v1 —
// goes through the http.Client of one Stack. It owns the per-host set-ups
// (TLS from registry/hosts, the scheme probe of insecure registries), the
// timeouts, the retries, the auth (challenges, the realm memo, the token
// fetch and the token caches). It knows no protocol beyond what those
// need, and imports no wharf package but registry/hosts.
//
// A request goes down this chain:
//
//	Client                 auth, per repository endpoint and credential
//	   │                   identity (client.go): the cached token for the
//	   │                   request's host and scopes, or one fetched first
//	   │                   from a remembered realm (challenge.go); on a 401
//	   │                   of its own origin the challenge (wwwauth.go), the
//	   │                   token fetch with its realm safeguards
//	   │                   (tokenfetch.go, tokenbody.go), one retry
//	http.Client            CheckRedirect: no https→http downgrade, no
//	   │                   credentials to another host:port (transport.go)
//	uploadCheck            a blob's receipt names the digest sent (receipt.go)
//	   │
//	idempotentRetry        the host's gate: one back-off per host for a 429
//	   │                   or 503 with Retry-After, one probe (gate.go);
//	   │                   RateLimit headers recorded (ratelimit.go);
//	   │                   retries GET/HEAD on 408, 429, 5xx and network
//	   │                   errors, Retry-After capped (retry.go)
//	current hostTransports the configuration's per-host set-ups, swapped
//	   │                   whole by Reload
//	hostTransports         per-host set-up (secure or not, certs dir,
//	   │                   hosts.toml TLS) and the scheme probe (probe.go);
//	   │                   upload guard on request bodies (upload.go)
//	roundTrip              metrics: every attempt reported (metrics.go)
//	   │
//	http.Transport         pooled connections, dial/handshake/header timeouts
//	   │
//	slowBody               body watchdog: every response body must move
//	                       1 KiB per window (timeouts.go)
//
// A token request leaves Client for the same http.Client, under a
// CheckRedirect that validates every hop as the realm was.
package transport

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/wharfproject/wharf/registry/hosts"
)

// The retry policy (transport.go): RetryAttempts retries of an idempotent
// request after the first attempt; RetryMaxWait caps an honoured
// Retry-After.
const (
	RetryAttempts = retryAttempts
	RetryMaxWait  = retryMaxWait
)

// Options configure a Stack; zero values are the defaults.
type Options struct {
	// Timeout: registry.ServiceOptions.Timeout (timeouts.go).
	Timeout time.Duration
	// Transport overrides the base transport of every host (tests).
	Transport http.RoundTripper
	// Observer is told of every request and token look-up; nil = none.
	Observer Observer
	// MaxWait caps an honoured Retry-After; 0 = RetryMaxWait.
	MaxWait time.Duration
}

// Stack is the HTTP stack of one registry.Service. Safe for concurrent use.
type Stack struct {
	tm       timeouts
	override http.RoundTripper
	obs      Observer

	hosts  atomic.Pointer[hostTransports] // of the current configuration
	memo   *challengeMemo
	client *http.Client

	mu     sync.Mutex
	tokens *simplelru.LRU[string, *tokenCache] // credential identity → its tokens

	gates  *hostGates  // per-host back-off (gate.go)
	limits *rateLimits // RateLimit headers per host and identity (ratelimit.go)
}

// maxCredentialIdentities bounds the per-credential token caches; beyond
// it the least recently used is dropped (a token is cheap to fetch again).
const maxCredentialIdentities = 256

// New validates opts.Timeout and builds the stack for cfg.
func New(cfg *hosts.Config, opts Options) (*Stack, error) {
	tm, err := newTimeouts(opts.Timeout)
	if err != nil {
		return nil, err
	}
	maxWait := opts.MaxWait
	if maxWait == 0 {
		maxWait = retryMaxWait
	}
	s := &Stack{tm: tm, override: opts.Transport, obs: opts.Observer, tokens: mustLRU[string, *tokenCache](maxCredentialIdentities),
		gates: newHostGates(maxWait), limits: newRateLimits()}
	s.hosts.Store(s.newHosts(cfg))
	s.memo = newChallengeMemo()
	s.client = &http.Client{
		Transport:     uploadCheck{newIdempotentRetry(currentHosts{s}, newRetryPolicy(maxWait), s.gates, s.limits)},
		CheckRedirect: checkRedirect,
	}
	return s, nil
}

func (s *Stack) newHosts(cfg *hosts.Config) *hostTransports {
	t := newHostTransports(cfg, s.tm, s.override)
	t.obs = s.obs
	return t
}

// currentHosts sends each request through the per-host set-ups of the
// configuration current when the request starts.
type currentHosts struct{ s *Stack }

func (c currentHosts) RoundTrip(req *http.Request) (*http.Response, error) {
	return c.s.hosts.Load().RoundTrip(req)
}

// Client is the http.Client every registry request goes through.
func (s *Stack) Client() *http.Client { return s.client }

// Do sends req through the stack without a token client (login, v1, a
// token server's realm) and classifies its error (classify.go).
func (s *Stack) Do(req *http.Request) (*http.Response, error) {
	resp, err := s.client.Do(req)
	return resp, classify(err, req.URL.Host)
}

// Reload sets the hosts up again from cfg, each on its next use. Requests
// already running finish on the old set-ups, whose idle connections are
// closed, so a changed certificate is used from the next connection on.
func (s *Stack) Reload(cfg *hosts.Config) {
	old := s.hosts.Swap(s.newHosts(cfg))
	old.closeIdle()
}

// SetUp sets host up (secure or not, its TLS) unless it is already.
func (s *Stack) SetUp(ctx context.Context, host string) error {
	_, err := s.hosts.Load().forHost(ctx, host)
	return classify(err, host)
}

// Scheme sets host up and says whether it speaks plain HTTP: a secure host
// never does; an insecure one is probed once (probe.go). ping: the probe
// may send its plain-HTTP GET /v2/ beside it, which pays only when host is
// the first a request asks.
func (s *Stack) Scheme(ctx context.Context, host string, ping bool) (plainHTTP bool, err error) {
	t := s.hosts.Load()
	e, err := t.forHost(ctx, host)
	if err != nil {
		return false, classify(err, host)
	}
	if e.secure {
		return false, nil
	}
	var memo challengeLearner
	if ping {
		memo = s.memo
	}
	scheme, err := t.schemeOf(ctx, e, memo)
	if err != nil {
		return false, classify(err, host)
	}
	return scheme == schemeHTTP, nil
}

// tokensOf is the token cache of one credential identity (tokens of
// different users never mix).
func (s *Stack) tokensOf(identity string) *tokenCache {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.tokens.Get(identity)
	if !ok {
		c = newTokenCache(s.tm.shared(), s.obs)
		s.tokens.Add(identity, c)
	}
	return c
}

// RememberChallenge records that host wants a bearer token from realm
// (for service): its next request without a token is answered locally.
func (s *Stack) RememberChallenge(host, realm, service string) {
	s.memo.remember(host, bearerChallenge{realm: realm, service: service})
}

// LearnChallenge records the challenges of a 401 that host's /v2/ API
// sent a request made outside Client (a bearer realm is remembered).
func (s *Stack) LearnChallenge(host string, values []string) { s.memo.learn(host, values) }

// CheckRedirect is the redirect policy of every registry http.Client.
func CheckRedirect(req *http.Request, via []*http.Request) error { return checkRedirect(req, via) }

// RememberedRealm is the bearer realm the challenge memo holds for host.
func (s *Stack) RememberedRealm(host string) (string, bool) {
	c, ok := s.memo.known(host)
	return c.realm, ok
}

// RememberedChallenge is the bearer challenge the memo holds for host, as
// the registry would send it: a caller about to send an unauthenticated
// GET /v2/ only to read the challenge need not.
func (s *Stack) RememberedChallenge(host string) (Challenge, bool) {
	c, ok := s.memo.known(host)
	if !ok {
		return Challenge{}, false
	}
	p := map[string]string{"realm": c.realm}
	if c.service != "" {
		p["service"] = c.service
	}
	return Challenge{Scheme: schemeBearer, Params: p}, true
}

// RateLimits is, per registry host, the rate limit its answers said last
// (to whichever identity), sorted by host.
func (s *Stack) RateLimits() []RateLimit { return s.limits.latest() }

// Backoffs lists the hosts backed off now by a 429 or 503 with
// Retry-After (gate.go), sorted by host.
func (s *Stack) Backoffs() []HostBackoff { return s.gates.closedNow() }
