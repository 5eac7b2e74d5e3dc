package registry

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wharfproject/wharf/registry/hosts"
)

// endpoint is one API host a repository is read from or written to.
//
// Scheme policy (decided here, documented in docs/architecture.md):
//   - secure registries: HTTPS only, verified (system roots + certs dir);
//   - insecure registries, loopback ones (127.0.0.0/8, ::1, localhost)
//     included: like dockerd, HTTPS first (unverified) and plain HTTP when
//     the host does not speak TLS. An SSH tunnel or a port-forward to a
//     real registry serves TLS on 127.0.0.1; a test registry serves plain
//     HTTP there; both must work. The scheme is found by a TLS handshake
//     alone — no HTTP request, so the request budgets are unchanged — once
//     per host, and remembered for the daemon's life: the next request
//     pays nothing.
type endpoint struct {
	host      string // host[:port] of the API
	plainHTTP bool
	mirror    bool
	// root is the API root when it is not /v2 (rooted: a hosts.toml server
	// or mirror with a path, or override_path, whose root may be "", the
	// host's own root): requests are rewritten to it.
	root   string
	rooted bool
	caps   hosts.Capabilities // what the endpoint is used for (hosts.toml); upstreams: all
	header http.Header        // hosts.toml's header
}

func (e *endpoint) baseURL() string {
	if e.plainHTTP {
		return "http://" + e.host
	}
	return "https://" + e.host
}

// apiBase is the URL of the endpoint's API root, without a final slash:
// scheme://host/v2, or the root a hosts.toml gives it.
func (e *endpoint) apiBase() string {
	if e.rooted {
		return e.baseURL() + e.root
	}
	return e.baseURL() + "/v2"
}

// endpointFor sets host up (transport.go) and decides its scheme; ping:
// whether the scheme probe may send its plain-HTTP GET /v2/ beside it
// (schemeOf), which pays only when host is the first asked.
func (s *Service) endpointFor(ctx context.Context, host string, mirror, ping bool) (*endpoint, error) {
	e, err := s.transports().forHost(ctx, host)
	if err != nil {
		return nil, classify(err, host)
	}
	ep := &endpoint{host: host, mirror: mirror, caps: hosts.CapAll}
	if e.secure {
		return ep, nil
	}
	var memo challengeLearner
	if ping {
		memo = s.memo
	}
	scheme, err := s.transports().schemeOf(ctx, e, memo)
	if err != nil {
		return nil, classify(err, host)
	}
	ep.plainHTTP = scheme == schemeHTTP
	return ep, nil
}

// The scheme an insecure registry speaks (hostEntry.scheme).
const (
	schemeUnknown int32 = iota
	schemeHTTPS
	schemeHTTP
)

// challengeLearner records the challenges of a 401 from host's /v2/ API
// (challengeMemo.learn).
type challengeLearner interface {
	learn(host string, values []string) (challenge, bool)
}

// schemeOf returns the scheme of insecure host e, probing it on first use
// (one probe per host at a time, shared by every caller and detached from
// each: one client leaving does not fail the others).
//
// With memo (nil: no ping), a plain-HTTP GET /v2/ goes beside the probe
// (pingPlain): when the probe says HTTP, the ping's challenge is handed
// to memo and its connection is left in the pool, so the first real
// request goes with a token on a connection already open: the probe's
// round trip is hidden behind the unauthenticated request every cold
// flow makes anyway. When the probe
// says HTTPS (or fails), the ping is cancelled and nothing it brought is
// used: a plaintext answer says nothing trustworthy about a TLS host.
func (t *hostTransports) schemeOf(ctx context.Context, e *hostEntry, memo challengeLearner) (int32, error) {
	if sc := e.scheme.Load(); sc != schemeUnknown {
		return sc, nil
	}
	v, err := t.probing.do(ctx, e.host, t.tm.shared(), func(ctx context.Context) (any, error) {
		var ping *plainPing
		if memo != nil && !t.proxied(e) {
			ping = t.pingPlain(ctx, e)
		}
		start := time.Now()
		sc, remember, err := t.probeScheme(ctx, e)
		if ping != nil {
			// The ping and the probe each cost a connect and one exchange:
			// a ping not answered within the probe's own time again is not
			// waited for (a registry slow on /v2/ must not hold up the
			// scheme every request of the host is waiting for).
			useful := err == nil && sc == schemeHTTP
			if values := ping.wait(useful, max(time.Since(start), minPingWait)); useful && len(values) > 0 {
				memo.learn(e.host, values)
			}
		}
		if err != nil {
			return nil, err
		}
		if remember {
			e.scheme.Store(sc)
		}
		return sc, nil
	})
	if err != nil {
		return schemeUnknown, err
	}
	return v.(int32), nil
}

// probeScheme finds which scheme e speaks. remember is false for answers
// that are guesses. Without a proxy it is a TLS handshake and nothing more:
//   - the handshake completes, or the peer answers with a TLS alert (for
//     example: a client certificate is required): HTTPS;
//   - the peer answers bytes that are not TLS (a plain HTTP server says
//     "HTTP/1.1 400 Bad Request" to a ClientHello): plain HTTP;
//   - the peer closes without a word: plain HTTP this time, not
//     remembered (some servers close on a request they cannot parse;
//     dockerd falls back to HTTP on any HTTPS failure);
//   - a host without a port that refuses 443: plain HTTP on 80, not
//     remembered;
//   - anything else (refused on an explicit port, reset, silence until the
//     handshake timeout): an error, and nothing remembered. No scheme can
//     help a host in that state, so no request is tried.
//
// Behind a proxy a handshake cannot be made directly; then the probe is
// GET /v2/ over HTTPS through the host's transport, and plain HTTP when
// that fails, as dockerd does (it costs that one request).
func (t *hostTransports) probeScheme(ctx context.Context, e *hostEntry) (int32, bool, error) {
	if t.proxied(e) {
		return t.probeThroughProxy(ctx, e)
	}
	addr, explicitPort := e.host, true
	if _, _, err := net.SplitHostPort(e.host); err != nil {
		addr, explicitPort = net.JoinHostPort(hosts.HostOnly(e.host), "443"), false
	}
	d := net.Dialer{Timeout: t.tm.dial}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if !explicitPort && ctx.Err() == nil {
			return schemeHTTP, false, nil
		}
		return schemeUnknown, false, err
	}
	defer conn.Close()
	conf := e.tls.Clone()
	conf.ServerName = hosts.HostOnly(e.host)
	conf.InsecureSkipVerify = true //nolint:gosec // the probe only learns the scheme; it sends nothing
	hctx, cancel := context.WithTimeout(ctx, t.tm.handshake)
	defer cancel()
	err = tls.Client(conn, conf).HandshakeContext(hctx)
	var rh tls.RecordHeaderError
	var op *net.OpError
	switch {
	case err == nil:
		return schemeHTTPS, true, nil
	case errors.As(err, &rh):
		return schemeHTTP, true, nil
	case errors.As(err, &op) && op.Op == "remote error": // crypto/tls's wrapping of a received alert
		return schemeHTTPS, true, nil
	case errors.Is(err, io.EOF):
		return schemeHTTP, false, nil
	}
	return schemeUnknown, false, err
}

// proxied reports whether requests to e go through a proxy (then the
// probe is itself a request, and no ping goes beside it).
func (t *hostTransports) proxied(e *hostEntry) bool {
	if t.override != nil {
		return false
	}
	p, err := t.base.Proxy(&http.Request{URL: &url.URL{Scheme: "https", Host: e.host}})
	return err == nil && p != nil
}

// minPingWait is the least the probe waits for its ping once it has its
// own answer: on loopback both take well under a millisecond, and a
// scheduler hiccup should not waste the ping.
const minPingWait = 20 * time.Millisecond

// plainPing is a GET http://host/v2/ sent while the scheme probe runs. It
// carries no credentials and no repository name, only the API root, in
// clear to a host that is insecure by the user's configuration or on
// loopback, where the cold flow's first request would go in clear anyway
// if the host speaks HTTP.
type plainPing struct {
	cancel context.CancelFunc
	done   chan struct{}
	values []string // the WWW-Authenticate values of a 401; written before done closes
}

// pingPlain starts the ping. It goes through e's transport and is
// reported like any registry request (metrics.go). Its body, a small
// error document, is read to the end so that net/http keeps the
// connection for the next request to the host.
func (t *hostTransports) pingPlain(ctx context.Context, e *hostEntry) *plainPing {
	pctx, cancel := context.WithCancel(ctx)
	p := &plainPing{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		req, err := http.NewRequestWithContext(pctx, http.MethodGet, "http://"+e.host+"/v2/", nil)
		if err != nil {
			return
		}
		resp, err := t.roundTrip(e, req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxChallengeBody))
		if err == nil && resp.StatusCode == http.StatusUnauthorized {
			p.values = resp.Header.Values("Www-Authenticate")
		}
	}()
	return p
}

// wait ends the ping and returns what it learnt. keep is whether the
// probe found plain HTTP; otherwise the ping is cancelled and returns
// nothing. A ping still unanswered when limit has passed since the probe
// ended is cancelled too: the probe's own answer is not held up for it.
func (p *plainPing) wait(keep bool, limit time.Duration) []string {
	defer p.cancel()
	if !keep {
		p.cancel()
		<-p.done
		return nil
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.values
	case <-timer.C:
		p.cancel()
		<-p.done
		return nil
	}
}

// probeThroughProxy asks https://host/v2/ and, when that fails,
// http://host/v2/. The scheme that answered is remembered.
func (t *hostTransports) probeThroughProxy(ctx context.Context, e *hostEntry) (int32, bool, error) {
	try := func(scheme string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+e.host+"/v2/", nil)
		if err != nil {
			return err
		}
		resp, err := e.rt.RoundTrip(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		return nil
	}
	if err := try("https"); err == nil {
		return schemeHTTPS, true, nil
	}
	if err := try("http"); err != nil {
		return schemeUnknown, false, err
	}
	return schemeHTTP, true, nil
}

// endpointsFor are the endpoints of index, in the order reads try them
// (hosts.Config.Endpoints), each set up (transport.go) and, for the
// registry's own API host, its scheme decided. cfg is read once, so a
// reload in between cannot mix two configurations.
func (s *Service) endpointsFor(ctx context.Context, cfg *hosts.Config, index string) ([]*endpoint, error) {
	defs := cfg.Endpoints(index)
	eps := make([]*endpoint, 0, len(defs))
	for i, d := range defs {
		if d.Probe {
			// The probe's ping helps only the host asked first (no mirror before it).
			up, err := s.endpointFor(ctx, d.Host, false, i == 0)
			if err != nil {
				return nil, err
			}
			eps = append(eps, up)
			continue
		}
		if !d.Mirror {
			if _, err := s.transports().forHost(ctx, d.Host); err != nil {
				return nil, classify(err, d.Host)
			}
		}
		eps = append(eps, &endpoint{host: d.Host, plainHTTP: d.PlainHTTP, mirror: d.Mirror, root: d.Root, rooted: d.Rooted, caps: d.Caps, header: d.Header})
	}
	return eps, nil
}

// rootRewrite sends the /v2/… requests of one host to its API root
// (oras-go builds every URL as scheme://host/v2/…). Other hosts (a token
// realm, a redirect to a blob store) are left alone.
type rootRewrite struct {
	host string
	root string // "/prefix/v2", or any path with override_path ("" = the host's root)
	next http.RoundTripper
}

func (t rootRewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	p := req.URL.Path
	if !strings.EqualFold(req.URL.Host, t.host) || (p != "/v2" && !strings.HasPrefix(p, "/v2/")) {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.URL.Path = t.root + strings.TrimPrefix(p, "/v2")
	r.URL.RawPath = ""
	if r.URL.Path == "" {
		r.URL.Path = "/"
	}
	return t.next.RoundTrip(r)
}

func (s *Service) setUserAgent(req *http.Request) {
	if s.opts.UserAgent != "" {
		req.Header.Set("User-Agent", s.opts.UserAgent)
	}
}
