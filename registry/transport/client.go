package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
)

// Client adds Authorization to the requests of one credential identity to
// one registry endpoint, as containerd's docker authorizer and
// go-containerregistry's bearer transport do:
//
//  1. the token cached for the request's host and scope set (WithScopes)
//     goes with the request; with none, and a bearer realm remembered for
//     the host (challengeMemo), the token is fetched first;
//  2. a 401 from the request's own origin is parsed (PreferredChallenge):
//     Basic sends the host's credentials, Bearer fetches a token for the
//     scopes asked plus the challenge's (tokenfetch.go), and the request
//     is sent once more, its body rewound (GetBody);
//  3. a 401 from elsewhere (a redirect's target) is handed back as it is,
//     but for a same-host upgrade from http to https.
//
// Credentials go only where CredentialFunc gives them: the host they
// belong to, and, for the basic-to-token exchange, the realm that host
// named (validateRealm); never along a redirect to another origin
// (CheckRedirect, sendToken).
type Client struct {
	http     *http.Client
	header   http.Header
	cred     CredentialFunc
	tokens   *tokenCache
	memo     *challengeMemo // nil: neither used nor taught
	clientID string
	blocked  []netip.Prefix
	identity string // ClientConfig.Identity: rate limits are kept by it
	limits   *rateLimits
}

// Credential is what a Client may present to one registry host: a
// username and password (basic, or exchanged at the realm for a token), an
// identity token (OAuth2 refresh grant) or a registry token (sent as the
// bearer token itself).
type Credential struct {
	Username     string
	Password     string
	RefreshToken string
	AccessToken  string
}

// CredentialFunc gives the credential for host (host[:port] of a request);
// the zero Credential is none.
type CredentialFunc func(host string) Credential

// ClientConfig configures Stack.NewClient.
type ClientConfig struct {
	// HTTP sends the requests (nil: the Stack's client).
	HTTP *http.Client
	// Header is added to every request, token requests included.
	Header http.Header
	// Identity names the credential (tokens of different identities never
	// mix); Credential gives it per host (nil: anonymous).
	Identity   string
	Credential CredentialFunc
	// ClientID is the OAuth2 client_id of the refresh grant.
	ClientID string
	// BlockedRealmPrefixes: addresses a realm on another host must not be
	// (nil: DefaultBlockedRealmPrefixes).
	BlockedRealmPrefixes []netip.Prefix
	// NoRealmMemo: the endpoint's API is not under /v2/ (a hosts.toml root),
	// so its challenges are neither remembered nor answered from memory.
	NoRealmMemo bool
}

// ErrNoBasicCredential: the registry wants basic auth and no credential
// was given for it.
var ErrNoBasicCredential = errors.New("basic credential not found")

// NewClient is a Client over the Stack's token cache of cfg.Identity.
func (s *Stack) NewClient(cfg ClientConfig) *Client {
	c := &Client{http: cfg.HTTP, header: cfg.Header, cred: cfg.Credential, tokens: s.tokensOf(cfg.Identity), memo: s.memo, clientID: cfg.ClientID, blocked: cfg.BlockedRealmPrefixes,
		identity: cfg.Identity, limits: s.limits}
	if c.http == nil {
		c.http = s.client
	}
	if c.blocked == nil {
		c.blocked = DefaultBlockedRealmPrefixes()
	}
	if cfg.NoRealmMemo {
		c.memo = nil
	}
	return c
}

func (c *Client) credential(host string) Credential {
	if c.cred == nil {
		return Credential{}
	}
	return c.cred(host)
}

// send adds the configured headers and sends req.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	for k, v := range c.header {
		req.Header[k] = append(req.Header[k], v...)
	}
	return c.http.Do(req)
}

// Do sends req with the credentials its host wants; a request that already
// carries Authorization is sent as it is.
func (c *Client) Do(orig *http.Request) (*http.Response, error) {
	host := orig.Host
	if host == "" {
		host = orig.URL.Host
	}
	// The retry layer records the answer's rate limit under this identity.
	orig = orig.WithContext(withIdentity(orig.Context(), c.identity))
	resp, err := c.do(orig, host)
	return resp, classify(err, host) // classify.go: the one place
}

// RateLimit is the rate limit host's answers to this Client's identity
// said last; ok is false when none carried one.
func (c *Client) RateLimit(host string) (RateLimit, bool) {
	return c.limits.get(host, c.identity)
}

// do is Do before its error is classified.
func (c *Client) do(orig *http.Request, host string) (*http.Response, error) {
	if orig.Header.Get("Authorization") != "" {
		return c.send(orig)
	}
	ctx := orig.Context()
	scopes := scopesFor(ctx, host)
	key := strings.Join(scopes, " ")
	req := orig.Clone(ctx)

	// The token cached for this host and scope set.
	attempted := "" // the scope key whose cached bearer token went with req
	if scheme, ok := c.tokens.scheme(host); ok {
		switch scheme {
		case schemeBasic:
			if tok, ok := c.tokens.get(host, schemeBasic, ""); ok {
				req.Header.Set("Authorization", "Basic "+tok)
			}
		case schemeBearer:
			attempted = key
			if tok, ok := c.tokens.get(host, schemeBearer, key); ok {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
		}
	}
	// None, on a host known to want a bearer token: fetch it first.
	if req.Header.Get("Authorization") == "" && c.memoFor(orig) {
		if bc, ok := c.memo.known(host); ok {
			ch := Challenge{Scheme: schemeBearer, Params: map[string]string{"realm": bc.realm, "service": bc.service}}
			return c.bearer(orig, host, ch, scopes, attempted, true, false)
		}
	}

	resp, err := c.sendLearning(req, host)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}

	// Credentials only for the request's own origin, or a same-host
	// upgrade to https (whose tokens the cache's keys do not tell apart).
	authReq, cache := orig, true
	if resp.Request != nil && !sameHTTPOrigin(orig.URL, resp.Request.URL) {
		if !safeHTTPSUpgrade(orig, resp.Request) {
			return resp, nil
		}
		authReq = resp.Request.Clone(ctx)
		authReq.Header = orig.Header.Clone()
		if authReq.Method == orig.Method {
			authReq.GetBody = orig.GetBody
		}
		cache = false
	}
	ch, ok := PreferredChallenge(resp.Header.Values("Www-Authenticate"))
	if !ok {
		return resp, nil
	}
	discardChallenge(resp)
	if ch.Scheme == schemeBasic {
		return c.basic(authReq, host, cache)
	}
	if s := ch.Params["scope"]; s != "" {
		// The scopes the registry hints at, merged with ours.
		scopes = cleanScopes(append(scopes, strings.Fields(s)...))
	}
	return c.bearer(authReq, host, ch, scopes, attempted, cache, true)
}

// memoFor says whether req's answers teach the realm memo and whether it
// may be answered from it: a /v2/ request of an endpoint whose API is there.
func (c *Client) memoFor(req *http.Request) bool {
	return c.memo != nil && strings.HasPrefix(req.URL.Path, "/v2/")
}

// sendLearning sends req; a 401 from req's own origin teaches the realm
// memo host's challenge, and a refused Authorization with no bearer
// challenge makes it forget host.
func (c *Client) sendLearning(req *http.Request, host string) (*http.Response, error) {
	resp, err := c.send(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || !c.memoFor(req) {
		return resp, err
	}
	if resp.Request != nil && !sameHTTPOrigin(req.URL, resp.Request.URL) {
		return resp, nil
	}
	ch, ok := c.memo.learn(host, resp.Header.Values("Www-Authenticate"))
	if req.Header.Get("Authorization") != "" && !(ok && ch.Scheme == schemeBearer) {
		c.memo.forget(host)
	}
	return resp, nil
}

// basic sends authReq again with host's username and password.
func (c *Client) basic(authReq *http.Request, host string, cache bool) (*http.Response, error) {
	ctx := authReq.Context()
	tok, err := c.tokens.fetch(ctx, host, schemeBasic, "", cache, func(context.Context) (fetched, error) {
		return basicToken(c.credential(host))
	})
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", authReq.Method, authReq.URL.Redacted(), err)
	}
	req := authReq.Clone(ctx)
	req.Header.Set("Authorization", "Basic "+tok)
	if err := rewindBody(req); err != nil {
		return nil, err
	}
	return c.sendLearning(req, host)
}

// bearer sends authReq with a token for scopes from challenge ch: one
// cached for these scopes (unless that one was just tried: attempted),
// else one fetched from ch's realm once validated. sent: authReq's body
// was sent once already and is rewound.
func (c *Client) bearer(authReq *http.Request, host string, ch Challenge, scopes []string, attempted string, cache, sent bool) (*http.Response, error) {
	ctx := authReq.Context()
	key := strings.Join(scopes, " ")
	try := func(tok string) (*http.Response, error) {
		req := authReq.Clone(ctx)
		req.Header.Set("Authorization", "Bearer "+tok)
		if sent {
			if err := rewindBody(req); err != nil {
				return nil, err
			}
		}
		sent = true
		return c.sendLearning(req, host)
	}
	if cache && key != attempted {
		if tok, ok := c.tokens.get(host, schemeBearer, key); ok {
			resp, err := try(tok)
			if err != nil || resp.StatusCode != http.StatusUnauthorized {
				return resp, err
			}
			discardChallenge(resp)
		}
	}
	realm := ch.Params["realm"]
	if err := validateRealm(ctx, realm, authReq.URL, c.blocked); err != nil {
		return nil, fmt.Errorf("%s %q: %w", authReq.Method, authReq.URL.Redacted(), err)
	}
	tok, err := c.tokens.fetch(ctx, host, schemeBearer, key, cache, func(fctx context.Context) (fetched, error) {
		return c.fetchBearer(fctx, authReq.URL, host, realm, ch.Params["service"], scopes)
	})
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", authReq.Method, authReq.URL.Redacted(), err)
	}
	return try(tok)
}

// maxChallengeBody caps how much of a 401 body is read before it is
// dropped: the error document a registry sends with a challenge is ~150
// bytes; 4 KiB leaves room for verbose ones. A body read to its end lets
// net/http reuse the connection for the retry: closed unread, every cold
// inspect paid a second TCP (and TLS) handshake (bench/, case 1).
const maxChallengeBody = 4 << 10

func discardChallenge(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxChallengeBody))
	resp.Body.Close()
}

// rewindBody gives a request that is sent again its body from the start.
func rewindBody(req *http.Request) error {
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	if req.GetBody == nil {
		return fmt.Errorf("%s %q: request body is not rewindable", req.Method, req.URL.Redacted())
	}
	body, err := req.GetBody()
	if err != nil {
		return fmt.Errorf("%s %q: failed to get request body: %w", req.Method, req.URL.Redacted(), err)
	}
	req.Body = body
	return nil
}
