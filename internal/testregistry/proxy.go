package testregistry

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The pull-through (proxy) mode of the registry, as a fleet's shared cache
// runs it (docs/deploy.md has the production form of the same config):
//
//	proxy:
//	  remoteurl: <Options.ProxyRemoteURL>
//	  username: / password:   <Options.ProxyUsername / ProxyPassword>
//	  ttl: <Options.ProxyTTL>  (distribution's default: 168h)
//	redis:
//	  addrs: [<Options.Redis>]
//	storage:
//	  cache:
//	    blobdescriptor: redis  (else the registry's in-memory cache)

// proxyConfigYAML is the proxy section of config.yml ("" when not a proxy),
// with the redis section when Options.Redis is set.
func proxyConfigYAML(opts Options) string {
	var y string
	if opts.ProxyRemoteURL != "" {
		y = fmt.Sprintf("proxy:\n  remoteurl: %q\n", opts.ProxyRemoteURL)
		if opts.ProxyUsername != "" {
			y += fmt.Sprintf("  username: %q\n  password: %q\n", opts.ProxyUsername, opts.ProxyPassword)
		}
		if opts.ProxyTTL > 0 {
			y += fmt.Sprintf("  ttl: %s\n", opts.ProxyTTL)
		}
	}
	if opts.Redis != "" {
		y += fmt.Sprintf("redis:\n  addrs: [%q]\n  dialtimeout: 2s\n  readtimeout: 2s\n  writetimeout: 2s\n", opts.Redis)
	}
	return y
}

// storageCacheYAML is the storage.cache entry: redis when Options.Redis is
// set, else the in-memory blob-descriptor cache (distribution's default
// for a registry that names none is no cache at all).
func storageCacheYAML(opts Options) string {
	if opts.Redis != "" {
		return "  cache:\n    blobdescriptor: redis\n"
	}
	if opts.ProxyRemoteURL != "" {
		return "  cache:\n    blobdescriptor: inmemory\n"
	}
	return ""
}

// DefaultProxyTTL is distribution's default proxy TTL (7 days): how long a
// proxy keeps what it cached before it asks the remote again.
const DefaultProxyTTL = 168 * time.Hour

// Front serves a token-auth registry and its token server on one
// host:port, as Docker Hub and most registries do (the realm on the
// registry's own domain). The registry's pull-through mode needs it: it
// sends its credentials only to a realm on the remote's host (distribution's
// realmAllowed), and a test token server listens on a port of its own.
// Start the Front, start the registry with TokenRealm = Front.URL+"/token",
// then Route.
type Front struct {
	URL  string // http://127.0.0.1:PORT
	Host string // 127.0.0.1:PORT

	srv *httptest.Server

	mu              sync.Mutex
	registry, token *httputil.ReverseProxy
}

// NewFront starts a Front that answers 503 until Route is called.
func NewFront() *Front {
	f := &Front{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	f.Host = strings.TrimPrefix(f.srv.URL, "http://")
	return f
}

// Route sends /token… to tokenURL and everything else to registryURL
// (the Host header is kept, so upload Locations point back at the Front).
func (f *Front) Route(registryURL, tokenURL string) error {
	ru, err := url.Parse(registryURL)
	if err != nil {
		return err
	}
	tu, err := url.Parse(tokenURL)
	if err != nil {
		return err
	}
	reg, tok := httputil.NewSingleHostReverseProxy(ru), httputil.NewSingleHostReverseProxy(tu)
	reg.FlushInterval = -1
	f.mu.Lock()
	f.registry, f.token = reg, tok
	f.mu.Unlock()
	return nil
}

func (f *Front) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	reg, tok := f.registry, f.token
	f.mu.Unlock()
	switch {
	case reg == nil:
		http.Error(w, "front not routed yet", http.StatusServiceUnavailable)
	case strings.HasPrefix(r.URL.Path, "/token"):
		tok.ServeHTTP(w, r)
	default:
		reg.ServeHTTP(w, r)
	}
}

// Close stops the Front.
func (f *Front) Close() { f.srv.Close() }
