package transport

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/wharfproject/wharf/registry/hosts"
)

// Transport tuning. 64 concurrent remote inspects against one registry must
// reuse connections rather than open (and TIME_WAIT) a socket each, hence
// MaxIdleConnsPerHost 64; the timeouts bound a registry that accepts the
// connection and then says nothing.
const (
	dialTimeout           = 10 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	responseHeaderTimeout = 30 * time.Second
	idleConnTimeout       = 90 * time.Second
	maxIdleConnsPerHost   = 64
	maxIdleConns          = 256
	maxRedirects          = 10

	// retryAttempts bounds retries of idempotent requests (3 attempts in all);
	// retryMaxWait caps an honoured Retry-After so one slow registry cannot
	// hold a client for minutes.
	retryAttempts = 2
	retryMinWait  = 100 * time.Millisecond
	retryMaxWait  = 10 * time.Second
)

func newBaseTransport(tm timeouts) *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   tm.dial,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          maxIdleConns,
		MaxIdleConnsPerHost:   maxIdleConnsPerHost,
		IdleConnTimeout:       idleConnTimeout,
		TLSHandshakeTimeout:   tm.handshake,
		ResponseHeaderTimeout: tm.header,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
	}
}

// hostTransports routes each request to the transport of its host. What a
// host needs — whether it is secure (a DNS look-up when insecure CIDRs
// beyond loopback are configured), its certs directory
// (<certsdir>/<host[:port]>/{*.crt,client.cert,client.key}) and, for an
// insecure registry, the scheme it speaks — is worked out once per host and
// remembered for the daemon's life: a host without a certs directory shares
// the base transport (or the one InsecureSkipVerify transport), a host with
// one gets its own. Connection pools are per host anyway, so this loses no
// reuse.
//
// The set-up of a host runs outside any lock that other hosts take, in a
// detached flight per host: a slow DNS server or a certs directory on a
// hung file system holds up the requests to that host only (each bounded
// by its own context), never the rest of the registry traffic.
type hostTransports struct {
	cfg      *hosts.Config
	tm       timeouts
	base     *http.Transport
	insecure *http.Transport
	override http.RoundTripper // ServiceOptions.Transport (tests)
	obs      Observer          // metrics.go; nil = none

	mu    sync.Mutex
	hosts *simplelru.LRU[string, *hostEntry] // lower-case host[:port] → its set-up; least recently used forgotten first

	building detachedFlight // per host: newEntry
	probing  detachedFlight // per host: probeScheme (probe.go)
}

// hostEntry is what wharfd knows of one host[:port].
type hostEntry struct {
	host   string
	secure bool
	rt     http.RoundTripper
	tls    *tls.Config // the TLS config of rt's requests (roots, client certificate, verification)

	// scheme of an insecure registry's API, probed once (probe.go):
	// schemeUnknown, schemeHTTPS or schemeHTTP.
	scheme atomic.Int32
}

func newHostTransports(cfg *hosts.Config, tm timeouts, override http.RoundTripper) *hostTransports {
	t := &hostTransports{cfg: cfg, tm: tm, base: newBaseTransport(tm), override: override}
	t.hosts = mustLRU[string, *hostEntry](maxRememberedHosts)
	t.insecure = t.base.Clone()
	t.insecure.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // only for registries configured insecure
	settle(t.insecure)
	return t
}

// settle runs tr's one-time HTTP/2 set-up now. It writes
// tr.TLSClientConfig (NextProtos) on the transport's first request, and
// the scheme probe (probe.go) clones that config while the first
// request, its own ping among them, may be starting: a data race.
// CloseIdleConnections runs the set-up and, on a new transport, nothing else.
func settle(tr *http.Transport) { tr.CloseIdleConnections() }

func (t *hostTransports) RoundTrip(req *http.Request) (*http.Response, error) {
	e, err := t.forHost(req.Context(), req.URL.Host)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	var up *uploadGuard
	if req.Body != nil && req.Body != http.NoBody {
		req, up = guardUpload(req, t.tm)
	}
	resp, err := t.roundTrip(e, req) // e.rt.RoundTrip, reported (metrics.go)
	if up != nil {
		resp, err = up.answered(resp, err)
	}
	if err != nil {
		return nil, t.tm.named(req.Context(), err)
	}
	// Every body, from manifests and blobs to tokens and error documents,
	// is under the slow-body rule (timeouts.go).
	resp.Body = newSlowBody(resp.Body, req.URL.Host, t.tm.window)
	return resp, nil
}

// forHost returns host's set-up, building it on first use.
func (t *hostTransports) forHost(ctx context.Context, host string) (*hostEntry, error) {
	host = strings.ToLower(host)
	t.mu.Lock()
	e, ok := t.hosts.Get(host)
	t.mu.Unlock()
	if ok {
		return e, nil
	}
	v, err := t.building.do(ctx, host, t.tm.shared(), func(ctx context.Context) (any, error) {
		e, keep, err := t.newEntry(ctx, host)
		if err != nil {
			return nil, err
		}
		if keep {
			t.remember(e)
		}
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*hostEntry), nil
}

// newEntry works out host's set-up. keep is false when a DNS look-up
// failed: the answer (secure) is a fallback, not to be remembered. A
// broken certs directory is an error, not remembered either, so that
// fixing it takes effect on the next request.
func (t *hostTransports) newEntry(ctx context.Context, host string) (e *hostEntry, keep bool, err error) {
	// A look-up is part of connecting: it gets the dial timeout.
	lctx, cancel := context.WithTimeout(ctx, t.tm.dial)
	secure, lerr := t.cfg.SecureLookup(lctx, host)
	cancel()
	e = &hostEntry{host: host, secure: secure}
	conf, fromHostsFile, found, err := t.cfg.TLS(host)
	if err != nil {
		return nil, false, err
	}
	if fromHostsFile {
		// hosts.toml's ca, client and skip_verify, exactly as written.
		tr := t.base.Clone()
		tr.TLSClientConfig = conf.Clone()
		settle(tr)
		e.rt, e.tls = tr, tr.TLSClientConfig
		if t.override != nil {
			e.rt = t.override
		}
		return e, lerr == nil, nil
	}
	switch {
	case found:
		conf.InsecureSkipVerify = !secure //nolint:gosec // only for registries configured insecure
		tr := t.base.Clone()
		tr.TLSClientConfig = conf
		settle(tr)
		e.rt, e.tls = tr, conf
	case secure:
		e.rt, e.tls = t.base, t.base.TLSClientConfig
	default:
		e.rt, e.tls = t.insecure, t.insecure.TLSClientConfig
	}
	if t.override != nil {
		e.rt = t.override
	}
	return e, lerr == nil, nil
}

// closeIdle closes the idle connections of every transport t made: after
// a reload, the requests still running finish on theirs.
func (t *hostTransports) closeIdle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.hosts.Values() {
		if tr, ok := e.rt.(*http.Transport); ok {
			tr.CloseIdleConnections()
		}
	}
	t.base.CloseIdleConnections()
	t.insecure.CloseIdleConnections()
}

// remember keeps e; beyond maxRememberedHosts the least recently used
// other host is forgotten (and its idle connections closed): it is set up
// again when next used.
func (t *hostTransports) remember(e *hostEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hosts.Len() >= maxRememberedHosts && !t.hosts.Contains(e.host) {
		if _, old, ok := t.hosts.RemoveOldest(); ok {
			if tr, ok := old.rt.(*http.Transport); ok && tr != t.base && tr != t.insecure {
				tr.CloseIdleConnections()
			}
		}
	}
	t.hosts.Add(e.host, e)
}

// checkRedirect is installed on every registry http.Client. net/http strips
// Authorization only when the host name changes and follows https→http; a
// registry may not downgrade the scheme nor receive credentials meant for
// another host:port, so both are enforced here (Client.Do
// hands back a 401 from another origin without credentials; sendToken
// guards token requests the same way).
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	prev := via[len(via)-1]
	if strings.EqualFold(prev.URL.Scheme, "https") && !strings.EqualFold(req.URL.Scheme, "https") {
		return fmt.Errorf("refusing redirect from %s to %s: https to http downgrade", prev.URL.Redacted(), req.URL.Redacted())
	}
	for _, r := range via {
		if !sameOrigin(r.URL.Scheme, r.URL.Host, req.URL.Scheme, req.URL.Host) {
			req.Header.Del("Authorization")
			break
		}
	}
	return nil
}

func sameOrigin(s1, h1, s2, h2 string) bool {
	return canonicalHostPort(s1, h1) == canonicalHostPort(s2, h2)
}

func canonicalHostPort(scheme, host string) string {
	scheme = strings.ToLower(scheme)
	h, p, err := net.SplitHostPort(host)
	if err != nil {
		h = host
		p = map[string]string{"https": "443", "http": "80"}[scheme]
	}
	return scheme + "://" + strings.ToLower(h) + ":" + p
}
