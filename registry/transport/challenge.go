package transport

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
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

// maxRememberedHosts bounds the realm memo.
const maxRememberedHosts = 1024

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
	byHost  *simplelru.LRU[string, bearerChallenge] // least recently used forgotten first
	realms  map[string]bool                         // scheme://host/path of the realms of byHost
	expires *simplelru.LRU[string, time.Time]       // token → when it stops being valid
}

func newChallengeMemo(next http.RoundTripper) *challengeMemo {
	return &challengeMemo{
		next:    next,
		now:     time.Now,
		byHost:  mustLRU[string, bearerChallenge](maxRememberedHosts),
		realms:  map[string]bool{},
		expires: mustLRU[string, time.Time](maxRememberedTokens),
	}
}

func realmKey(scheme, host, path string) string {
	return strings.ToLower(scheme) + "://" + strings.ToLower(host) + path
}

func (m *challengeMemo) known(host string) (bearerChallenge, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byHost.Get(strings.ToLower(host))
}

func (m *challengeMemo) isRealm(req *http.Request) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.realms[realmKey(req.URL.Scheme, req.URL.Host, req.URL.Path)]
}

func (m *challengeMemo) remember(host string, c bearerChallenge) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byHost.Add(strings.ToLower(host), c) {
		m.syncRealms() // one host forgotten: its realm may be too
	}
	if u, err := url.Parse(c.realm); err == nil {
		m.realms[realmKey(u.Scheme, u.Host, u.Path)] = true
	}
}

// syncRealms keeps realms to the realms of the hosts byHost remembers
// (bounded with it). The caller holds m.mu.
func (m *challengeMemo) syncRealms() {
	clear(m.realms)
	for _, c := range m.byHost.Values() {
		if u, err := url.Parse(c.realm); err == nil {
			m.realms[realmKey(u.Scheme, u.Host, u.Path)] = true
		}
	}
}

// forget drops a host whose remembered challenge did not get us in.
func (m *challengeMemo) forget(host string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byHost.Remove(strings.ToLower(host))
}

// forgetRealm drops every host that sent us to req's realm.
func (m *challengeMemo) forgetRealm(req *http.Request) {
	key := realmKey(req.URL.Scheme, req.URL.Host, req.URL.Path)
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.realms, key)
	for _, h := range m.byHost.Keys() {
		c, _ := m.byHost.Peek(h)
		if u, err := url.Parse(c.realm); err == nil && realmKey(u.Scheme, u.Host, u.Path) == key {
			m.byHost.Remove(h)
		}
	}
}

// expiry returns when token stops being valid; zero when unknown (basic
// auth, or a token from a realm we did not see).
func (m *challengeMemo) expiry(token string) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	until, _ := m.expires.Get(token)
	return until
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
		if ok && (len(values) > 1 || len(ParseChallenges(values)) > 1) {
			resp.Header.Set("Www-Authenticate", c.String())
		}
		if !(ok && c.Scheme == "bearer") && req.Header.Get("Authorization") != "" {
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
// the plain-HTTP ping sent beside the scheme probe (probe.go). The
// realm itself is checked where it is used, by oras-go's auth.Client,
// which sees a remembered challenge as the 401 it answers locally.
func (m *challengeMemo) learn(host string, values []string) (c Challenge, ok bool) {
	c, ok = PreferredChallenge(values)
	if ok && c.Scheme == "bearer" {
		m.remember(host, bearerChallenge{realm: c.Params["realm"], service: c.Params["service"]})
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
