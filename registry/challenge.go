package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
const (
	defaultTokenLifetime = 60 * time.Second
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
	if u, err := parseURL(c.realm); err == nil {
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
		if u, err := parseURL(c.realm); err == nil && realmKey(u.Scheme, u.Host, u.Path) == key {
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
		scheme, params := parseChallenge(resp.Header.Get("Www-Authenticate"))
		if scheme == "bearer" && params["realm"] != "" {
			m.remember(req.URL.Host, bearerChallenge{realm: params["realm"], service: params["service"]})
		} else if req.Header.Get("Authorization") != "" {
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
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
		IssuedAt    string `json:"issued_at"`
	}
	if json.Unmarshal(body, &tr) == nil {
		lifetime := defaultTokenLifetime
		if tr.ExpiresIn > 0 {
			lifetime = time.Duration(tr.ExpiresIn) * time.Second
		}
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

// parseChallenge parses a WWW-Authenticate value: the scheme (lower case)
// and its auth-params. Only the first challenge is read, which is all
// registries send.
func parseChallenge(header string) (scheme string, params map[string]string) {
	header = strings.TrimSpace(header)
	i := strings.IndexAny(header, " \t")
	if i < 0 {
		return strings.ToLower(header), nil
	}
	scheme = strings.ToLower(header[:i])
	rest := header[i+1:]
	params = map[string]string{}
	for {
		rest = strings.TrimLeft(rest, " \t,")
		if rest == "" {
			return scheme, params
		}
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return scheme, params
		}
		key := strings.ToLower(strings.TrimSpace(rest[:eq]))
		if key == "" {
			return scheme, params
		}
		rest = strings.TrimLeft(rest[eq+1:], " \t")
		var val string
		if strings.HasPrefix(rest, `"`) {
			var b strings.Builder
			j := 1
			closed := false
			for ; j < len(rest); j++ {
				ch := rest[j]
				if ch == '\\' && j+1 < len(rest) {
					j++
					b.WriteByte(rest[j])
					continue
				}
				if ch == '"' {
					closed = true
					break
				}
				b.WriteByte(ch)
			}
			if !closed {
				return scheme, params
			}
			val = b.String()
			rest = rest[j+1:]
		} else {
			end := strings.IndexAny(rest, ", \t")
			if end < 0 {
				end = len(rest)
			}
			val = rest[:end]
			rest = rest[end:]
		}
		if _, dup := params[key]; !dup {
			params[key] = val
		}
	}
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
