package hostile

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
)

// FaultProxy is a reverse proxy in front of a real registry that injects a
// fault into every Every-th request: alternately a 503 and a connection
// reset. Counting (not randomness) keeps runs reproducible.
type FaultProxy struct {
	front
	// Requests and Injected count what passed and what was broken.
	Requests, Injected atomic.Int64

	every atomic.Int64
}

// NewFaultProxy proxies to target (http://host:port), breaking one request
// in every (0 = none).
func NewFaultProxy(target string, every int) (*FaultProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &FaultProxy{}
	p.every.Store(int64(every))
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = nil
	p.front = newFront(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := p.Requests.Add(1)
		if e := p.every.Load(); e > 0 && n%e == 0 && r.URL.Path != "/v2/" {
			k := p.Injected.Add(1)
			if k%2 == 0 {
				Reset(w)
				return
			}
			w.Header().Set("Retry-After", "0")
			WriteError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "injected fault")
			return
		}
		rp.ServeHTTP(w, r)
	}))
	return p, nil
}

// SetEvery changes the fault rate: one request in every is broken (0 = none).
func (p *FaultProxy) SetEvery(every int) { p.every.Store(int64(every)) }

// RewriteProxy is a reverse proxy in front of a real registry that changes
// its answers with Rewrite: a registry behind a front end that adds or
// reorders headers. The Host header is passed on unchanged, so that the
// registry's upload Locations point back at the proxy.
type RewriteProxy struct{ front }

// NewRewriteProxy proxies to target (http://host:port), passing every
// response through rewrite.
func NewRewriteProxy(target string, rewrite func(*http.Response) error) (*RewriteProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.ModifyResponse = rewrite
	return &RewriteProxy{newFront(rp)}, nil
}

// front is the loopback server a proxy listens on: Host (host:port) and
// URL are what clients are pointed at.
type front struct {
	Host string
	URL  string
	srv  *httptest.Server
}

func newFront(h http.Handler) front {
	srv := httptest.NewServer(h)
	return front{Host: strings.TrimPrefix(srv.URL, "http://"), URL: srv.URL, srv: srv}
}

// Close stops the proxy and ends every connection to it.
func (f *front) Close() {
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// CloseClientConnections ends the connections clients keep open, so their
// pools empty.
func (f *front) CloseClientConnections() { f.srv.CloseClientConnections() }
