package transport

import (
	"net/url"
	"strings"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// challengeMemo remembers, per registry host, the bearer realm and service
// its /v2/ API challenged with. A Client whose identity has no token yet
// for a new scope on a remembered host fetches the token before the
// request: a new repository on a known registry costs token + request, not
// 401 + token + request. It learns from every 401 a Client gets, from the
// plain-HTTP ping beside the scheme probe (probe.go) and from Login; it
// forgets a host whose remembered challenge stopped getting us in, and
// every host of a realm that failed (gone, 404, 5xx).

// maxRememberedHosts bounds the realm memo.
const maxRememberedHosts = 1024

type bearerChallenge struct {
	realm   string
	service string
}

type challengeMemo struct {
	mu     sync.Mutex
	byHost *simplelru.LRU[string, bearerChallenge] // least recently used forgotten first
}

func newChallengeMemo() *challengeMemo {
	return &challengeMemo{byHost: mustLRU[string, bearerChallenge](maxRememberedHosts)}
}

func realmKey(realm string) string {
	u, err := url.Parse(realm)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + u.Path
}

func (m *challengeMemo) known(host string) (bearerChallenge, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byHost.Get(strings.ToLower(host))
}

func (m *challengeMemo) remember(host string, c bearerChallenge) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byHost.Add(strings.ToLower(host), c)
}

// forget drops a host whose remembered challenge did not get us in.
func (m *challengeMemo) forget(host string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byHost.Remove(strings.ToLower(host))
}

// forgetRealm drops every host that sent us to realm (scheme, host and
// path compared; the query is the request's own).
func (m *challengeMemo) forgetRealm(realm string) {
	key := realmKey(realm)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, h := range m.byHost.Keys() {
		c, _ := m.byHost.Peek(h)
		if realmKey(c.realm) == key {
			m.byHost.Remove(h)
		}
	}
}

// learn records what a 401 of host's /v2/ API asks for (its
// WWW-Authenticate values): a Bearer challenge with a realm is remembered
// for host. c is the challenge wharfd answers (PreferredChallenge). The
// realm itself is checked where it is used (validateRealm).
func (m *challengeMemo) learn(host string, values []string) (c Challenge, ok bool) {
	c, ok = PreferredChallenge(values)
	if ok && c.Scheme == schemeBearer {
		m.remember(host, bearerChallenge{realm: c.Params["realm"], service: c.Params["service"]})
	}
	return c, ok
}
