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
	Host string
	URL  string
	// Requests and Injected count what passed and what was broken.
	Requests, Injected atomic.Int64

	every atomic.Int64
	srv   *httptest.Server
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
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	p.URL = p.srv.URL
	p.Host = strings.TrimPrefix(p.srv.URL, "http://")
	return p, nil
}

// Close stops the proxy and ends every connection to it.
func (p *FaultProxy) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// CloseClientConnections ends the connections clients keep open, so their
// pools empty.
func (p *FaultProxy) CloseClientConnections() { p.srv.CloseClientConnections() }

// SetEvery changes the fault rate: one request in every is broken (0 = none).
func (p *FaultProxy) SetEvery(every int) { p.every.Store(int64(every)) }

// RewriteProxy is a reverse proxy in front of a real registry that changes
// its answers with Rewrite: a registry behind a front end that adds or
// reorders headers. The Host header is passed on unchanged, so that the
// registry's upload Locations point back at the proxy.
type RewriteProxy struct {
	Host string
	URL  string
	srv  *httptest.Server
}

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
	p := &RewriteProxy{srv: httptest.NewServer(rp)}
	p.URL = p.srv.URL
	p.Host = strings.TrimPrefix(p.srv.URL, "http://")
	return p, nil
}

// Close stops the proxy and ends every connection to it.
func (p *RewriteProxy) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}
