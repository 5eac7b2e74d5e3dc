package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Why this file exists on top of oras-go: auth.Client learns a registry's
// bearer realm only from a 401, and forgets it; every new repository (a new
// token scope) costs an unauthenticated request, a 401, the token and the
// retry. challengeMemo remembers the realm/service per registry host and,
// when a /v2/ request without Authorization goes to a host known to want a
// bearer token, answers it locally with the remembered 401. oras-go then
// fetches the token with its own code and sends the request once: a new
// repository on a known registry costs token + request, not 3 trips.
// It also reads expires_in from token responses (oras-go drops it) so that
// tokenCache can expire tokens instead of discovering expiry by a 401.

// maxTokenBody caps a token response: a token must fit in an HTTP header
// (~16 KiB) and the response may hold it twice plus a refresh token.
const maxTokenBody = 64 << 10

// defaultTokenLifetime is the distribution spec's default when expires_in is
// absent; tokenExpiryMargin renews a little early so a token does not expire
// between the cache check and the registry.
//
// maxTokenLifetime caps expires_in. A time.Duration counts nanoseconds in
// an int64, so a lifetime over ~292 years used to overflow and read as
// already expired: a token fetch for every request. No registry issues
// tokens for longer than a day (Docker Hub 300 s, GCR 3600 s, ECR 12 h);
// a longer claim is held to a day, after which one token request renews it.
const (
	defaultTokenLifetime = 60 * time.Second
	maxTokenLifetime     = 24 * time.Hour
	tokenExpiryMargin    = 5 * time.Second
	maxRememberedHosts   = 1024
	maxRememberedTokens  = 4096
)

type bearerChallenge struct {
	realm   string
	service string
}

func (c bearerChallenge) header() string {
	h := fmt.Sprintf("Bearer realm=%q", c.realm)
	if c.service != "" {
		h += fmt.Sprintf(",service=%q", c.service)
	}
	return h
}

type challengeMemo struct {
	next http.RoundTripper
	now  func() time.Time

	mu      sync.Mutex
	byHost  map[string]bearerChallenge
	realms  map[string]bool      // scheme://host/path of known realms
	expires map[string]time.Time // token → when it stops being valid
}

func newChallengeMemo(next http.RoundTripper) *challengeMemo {
	return &challengeMemo{
		next:    next,
		now:     time.Now,
		byHost:  map[string]bearerChallenge{},
		realms:  map[string]bool{},
		expires: map[string]time.Time{},
	}
}

func realmKey(scheme, host, path string) string {
	return strings.ToLower(scheme) + "://" + strings.ToLower(host) + path
}

func (m *challengeMemo) known(host string) (bearerChallenge, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.byHost[strings.ToLower(host)]
	return c, ok
}

func (m *challengeMemo) isRealm(req *http.Request) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.realms[realmKey(req.URL.Scheme, req.URL.Host, req.URL.Path)]
}

func (m *challengeMemo) remember(host string, c bearerChallenge) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.byHost) >= maxRememberedHosts {
		clear(m.byHost)
		clear(m.realms)
	}
	m.byHost[strings.ToLower(host)] = c
	if u, err := url.Parse(c.realm); err == nil {
		m.realms[realmKey(u.Scheme, u.Host, u.Path)] = true
	}
}

// forget drops a host whose remembered challenge did not get us in.
func (m *challengeMemo) forget(host string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byHost, strings.ToLower(host))
}

// forgetRealm drops every host that sent us to req's realm.
func (m *challengeMemo) forgetRealm(req *http.Request) {
	key := realmKey(req.URL.Scheme, req.URL.Host, req.URL.Path)
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.realms, key)
	for h, c := range m.byHost {
		if u, err := url.Parse(c.realm); err == nil && realmKey(u.Scheme, u.Host, u.Path) == key {
			delete(m.byHost, h)
		}
	}
}

// expiry returns when token stops being valid; zero when unknown (basic
// auth, or a token from a realm we did not see).
func (m *challengeMemo) expiry(token string) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.expires[token]
}

func (m *challengeMemo) RoundTrip(req *http.Request) (*http.Response, error) {
	isV2 := strings.HasPrefix(req.URL.Path, "/v2/")
	if isV2 && req.Header.Get("Authorization") == "" && !m.isRealm(req) {
		if c, ok := m.known(req.URL.Host); ok {
			if req.Body != nil {
				req.Body.Close()
			}
			return syntheticChallenge(req, c), nil
		}
	}
	resp, err := m.next.RoundTrip(req)
	if err != nil {
		if m.isRealm(req) {
			// The remembered realm is gone (a restarted registry may no longer
			// use tokens): ask the registries again next time.
			m.forgetRealm(req)
		}
		return resp, err
	}
	switch {
	case isV2 && resp.StatusCode == http.StatusUnauthorized:
		values := resp.Header.Values("Www-Authenticate")
		c, ok := m.learn(req.URL.Host, values)
		if ok && (len(values) > 1 || len(parseChallenges(values)) > 1) {
			resp.Header.Set("Www-Authenticate", c.String())
		}
		if !(ok && c.scheme == "bearer") && req.Header.Get("Authorization") != "" {
			m.forget(req.URL.Host)
		}
		return readAheadChallenge(resp), nil
	case resp.StatusCode == http.StatusOK && m.isRealm(req):
		return m.captureToken(resp)
	case resp.StatusCode >= 400 && m.isRealm(req):
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode >= 500 {
			m.forgetRealm(req)
		}
		return reasonAsErrors(resp)
	}
	return resp, nil
}

// learn records what a 401 of host's /v2/ API asks for (its
// WWW-Authenticate values): a Bearer challenge with a realm is remembered
// for host. c is the challenge wharfd answers (preferredChallenge). Every
// 401 goes through here: the ones oras-go's requests get (RoundTrip) and
// the plain-HTTP ping sent beside the scheme probe (endpoints.go). The
// realm itself is checked where it is used, by oras-go's auth.Client,
// which sees a remembered challenge as the 401 it answers locally.
func (m *challengeMemo) learn(host string, values []string) (c challenge, ok bool) {
	c, ok = preferredChallenge(values)
	if ok && c.scheme == "bearer" {
		m.remember(host, bearerChallenge{realm: c.params["realm"], service: c.params["service"]})
	}
	return c, ok
}

// maxChallengeBody caps how much of a 401 body is read ahead: the error
// document a registry sends with a challenge is ~150 bytes; 4 KiB leaves
// room for verbose ones.
const maxChallengeBody = 4 << 10

// readAheadChallenge reads a small 401 body to its end and hands on an
// in-memory copy. oras-go closes a challenge's body without reading it, and
// net/http does not reuse a connection whose body was closed unread: every
// cold inspect paid a second TCP (and TLS) handshake to the registry, one
// RTT or more (bench/, case 1). A body larger than the cap is handed on
// unchanged (its first bytes re-joined), as before.
func readAheadChallenge(resp *http.Response) *http.Response {
	head, err := io.ReadAll(io.LimitReader(resp.Body, maxChallengeBody+1))
	if err == nil && len(head) <= maxChallengeBody {
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(head))
		return resp
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), errReader{err}, resp.Body), resp.Body}
	return resp
}

// errReader returns err once (nil: nothing), so that a read-ahead that
// failed fails the reader at the same byte.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	return 0, io.EOF
}

// syntheticChallenge is the 401 the registry would have sent.
func syntheticChallenge(req *http.Request, c bearerChallenge) *http.Response {
	h := http.Header{}
	h.Set("Www-Authenticate", c.header())
	h.Set("Content-Type", "application/json")
	return &http.Response{
		Status:        "401 Unauthorized",
		StatusCode:    http.StatusUnauthorized,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          http.NoBody,
		ContentLength: 0,
		Request:       req,
	}
}

// captureToken reads a token response (capped) to learn its lifetime and
// hands an identical body on to oras-go.
func (m *challengeMemo) captureToken(resp *http.Response) (*http.Response, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading token response from %s: %w", resp.Request.URL.Host, err)
	}
	if len(body) > maxTokenBody {
		return nil, fmt.Errorf("token response from %s is larger than %d bytes", resp.Request.URL.Host, maxTokenBody)
	}
	var tr struct {
		Token       string          `json:"token"`
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
	}
	if json.Unmarshal(body, &tr) == nil {
		lifetime := tokenLifetime(tr.ExpiresIn)
		// issued_at is the server's clock; counting from our own receipt
		// time is never later than the truth by more than the trip.
		until := m.now().Add(lifetime - tokenExpiryMargin)
		m.mu.Lock()
		if len(m.expires) >= maxRememberedTokens {
			now := m.now()
			for k, v := range m.expires {
				if v.Before(now) {
					delete(m.expires, k)
				}
			}
			if len(m.expires) >= maxRememberedTokens {
				clear(m.expires)
			}
		}
		for _, t := range []string{tr.Token, tr.AccessToken} {
			if t != "" {
				m.expires[t] = until
			}
		}
		m.mu.Unlock()
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// challenge is one auth challenge of a WWW-Authenticate header.
type challenge struct {
	scheme  string            // lower case: "bearer", "basic", "negotiate"…
	params  map[string]string // auth-params, names in lower case; the first of a repeated name wins
	token68 string            // the token68 form (Negotiate, NTLM), when given instead of params
}

// String is c as a header value that oras-go's parser reads: the scheme,
// then the params sorted by name, each quoted (only `"` and `\` escaped).
func (c challenge) String() string {
	var b strings.Builder
	switch c.scheme {
	case "bearer":
		b.WriteString("Bearer")
	case "basic":
		b.WriteString("Basic")
	default:
		b.WriteString(c.scheme)
	}
	if c.token68 != "" {
		b.WriteString(" " + c.token68)
		return b.String()
	}
	keys := make([]string, 0, len(c.params))
	for k := range c.params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(k + `="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(c.params[k]) + `"`)
	}
	return b.String()
}

// preferredChallenge picks the challenge wharfd answers among every one
// the response carries: Bearer with a realm, else Basic. A registry behind
// a front end may offer Negotiate or NTLM first (as a header of its own or
// first in one header); oras-go reads only the first header's first
// challenge, so a 401 offering more than one is rewritten to the chosen
// one (challengeMemo.RoundTrip). ok is false when neither is offered.
func preferredChallenge(values []string) (c challenge, ok bool) {
	var basic *challenge
	for _, ch := range parseChallenges(values) {
		switch {
		case ch.scheme == "bearer" && ch.params["realm"] != "":
			return ch, true
		case ch.scheme == "basic" && basic == nil:
			basic = &ch
		}
	}
	if basic != nil {
		return *basic, true
	}
	return challenge{}, false
}

// maxChallenges bounds what one response may make us parse: registries
// send one or two; a header listing thousands is not a challenge.
const maxChallenges = 16

// parseChallenges parses every challenge of every WWW-Authenticate value
// (RFC 7235 §4.1: several headers, and several comma-separated challenges
// in one; a challenge is a scheme and then a token68 or auth-params).
// Unparsable input ends the parse; what came before it is kept.
func parseChallenges(values []string) []challenge {
	var out []challenge
	for _, v := range values {
		p := challengeParser{s: v}
		for len(out) < maxChallenges {
			c, ok := p.next()
			if !ok {
				break
			}
			out = append(out, c)
		}
	}
	return out
}

type challengeParser struct {
	s string
	i int
}

func isTChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken68Char(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0
}

func (p *challengeParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *challengeParser) token() string {
	j := p.i
	for p.i < len(p.s) && isTChar(p.s[p.i]) {
		p.i++
	}
	return p.s[j:p.i]
}

func (p *challengeParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// atParam reports whether an auth-param (token BWS "=" BWS value) starts
// at the current position, without moving. "abc=" followed by nothing, a
// comma or more "=" is a token68, not a param.
func (p *challengeParser) atParam() bool {
	q := *p
	if q.token() == "" {
		return false
	}
	q.skipSpace()
	if q.peek() != '=' {
		return false
	}
	q.i++
	q.skipSpace()
	c := q.peek()
	return c != 0 && c != ',' && c != '='
}

// next returns the next challenge; ok is false at the end or at garbage.
func (p *challengeParser) next() (challenge, bool) {
	for p.i < len(p.s) && (p.s[p.i] == ',' || p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
	scheme := p.token()
	if scheme == "" {
		return challenge{}, false
	}
	c := challenge{scheme: strings.ToLower(scheme), params: map[string]string{}}
	if p.peek() != ' ' && p.peek() != '\t' {
		return c, true // no params: the end, or a comma before the next challenge
	}
	p.skipSpace()
	if !p.atParam() {
		// A token68, or nothing (then the next challenge follows a comma).
		j := p.i
		for p.i < len(p.s) && isToken68Char(p.s[p.i]) {
			p.i++
		}
		if p.i > j {
			for p.i < len(p.s) && p.s[p.i] == '=' {
				p.i++
			}
			c.token68 = p.s[j:p.i]
		}
		return c, true
	}
	for {
		key := strings.ToLower(p.token())
		p.skipSpace()
		p.i++ // '=', as atParam saw
		p.skipSpace()
		var val string
		if p.peek() == '"' {
			v, ok := p.quoted()
			if !ok {
				p.i = len(p.s)
				return c, true
			}
			val = v
		} else {
			// RFC 7235 wants a token; registries write URLs unquoted too
			// (realm=https://host/token): take everything to the next
			// comma or space.
			j := p.i
			for p.i < len(p.s) && p.s[p.i] != ',' && p.s[p.i] != ' ' && p.s[p.i] != '\t' {
				p.i++
			}
			val = p.s[j:p.i]
		}
		if _, dup := c.params[key]; !dup {
			c.params[key] = val
		}
		p.skipSpace()
		if p.peek() != ',' {
			return c, true
		}
		for p.i < len(p.s) && (p.s[p.i] == ',' || p.s[p.i] == ' ' || p.s[p.i] == '\t') {
			p.i++
		}
		if !p.atParam() {
			return c, true // the next challenge's scheme
		}
	}
}

// quoted reads a quoted-string at the current position (which is '"');
// ok is false when it does not end.
func (p *challengeParser) quoted() (string, bool) {
	var b strings.Builder
	for j := p.i + 1; j < len(p.s); j++ {
		switch ch := p.s[j]; ch {
		case '\\':
			if j+1 < len(p.s) {
				j++
				b.WriteByte(p.s[j])
			}
		case '"':
			p.i = j + 1
			return b.String(), true
		default:
			b.WriteByte(ch)
		}
	}
	return "", false
}

// tokenLifetime reads expires_in: a number of seconds (a numeric string is
// accepted too), capped at maxTokenLifetime; absent, zero, negative or
// unreadable is the spec's default.
func tokenLifetime(raw json.RawMessage) time.Duration {
	v := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	if v == "" {
		return defaultTokenLifetime
	}
	f, err := strconv.ParseFloat(v, 64)
	switch {
	case math.IsInf(f, 1) || (err == nil && f >= maxTokenLifetime.Seconds()):
		return maxTokenLifetime
	case err != nil || math.IsNaN(f) || f <= 0:
		return defaultTokenLifetime
	}
	if d := time.Duration(f * float64(time.Second)); d > 0 {
		return d
	}
	return defaultTokenLifetime // under a nanosecond: zero
}

// reasonAsErrors rewrites a refused token request's body into the
// distribution {"errors":[…]} form, which is the only one oras-go reads:
// token servers (Docker Hub's among them) say why in {"details": "…"}, and
// the user should see "incorrect username or password", not a bare 401.
func reasonAsErrors(resp *http.Response) (*http.Response, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return nil, fmt.Errorf("reading token error from %s: %w", resp.Request.URL.Host, err)
	}
	var probe struct {
		Errors json.RawMessage `json:"errors"`
	}
	if json.Unmarshal(body, &probe) != nil || !present(probe.Errors) {
		if reason := registryReason(body); reason != "" {
			code := "UNAUTHORIZED"
			if resp.StatusCode == http.StatusForbidden {
				code = "DENIED"
			}
			body, _ = json.Marshal(map[string]any{"errors": []map[string]string{{"code": code, "message": reason}}})
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}
