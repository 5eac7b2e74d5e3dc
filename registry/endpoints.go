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
	caps   hostCapabilities // what the endpoint is used for (hosts.toml); upstreams: all
	header http.Header      // hosts.toml's header
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

// apiHost is where an index's v2 API lives.
func apiHost(index string) string {
	if normaliseIndexName(index) == DefaultIndexName {
		return dockerHubAPIHost
	}
	return index
}

// endpointFor sets host up (transport.go) and decides its scheme.
func (s *Service) endpointFor(ctx context.Context, host string, mirror bool) (*endpoint, error) {
	e, err := s.transports().forHost(ctx, host)
	if err != nil {
		return nil, classify(err, host)
	}
	ep := &endpoint{host: host, mirror: mirror, caps: capAll}
	if e.secure {
		return ep, nil
	}
	scheme, err := s.transports().schemeOf(ctx, e)
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

// schemeOf returns the scheme of insecure host e, probing it on first use
// (one probe per host at a time, shared by every caller and detached from
// each: one client leaving does not fail the others).
func (t *hostTransports) schemeOf(ctx context.Context, e *hostEntry) (int32, error) {
	if sc := e.scheme.Load(); sc != schemeUnknown {
		return sc, nil
	}
	v, err := t.probing.do(ctx, e.host, t.tm.shared(), func(ctx context.Context) (any, error) {
		sc, remember, err := t.probeScheme(ctx, e)
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
	if t.override == nil {
		if p, err := t.base.Proxy(&http.Request{URL: &url.URL{Scheme: "https", Host: e.host}}); err == nil && p != nil {
			return t.probeThroughProxy(ctx, e)
		}
	}
	addr, explicitPort := e.host, true
	if _, _, err := net.SplitHostPort(e.host); err != nil {
		addr, explicitPort = net.JoinHostPort(hostOnly(e.host), "443"), false
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
	conf.ServerName = hostOnly(e.host)
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

// endpointsFor are the endpoints of index, in the order reads try them:
// for docker.io the registry-mirrors of daemon.json first; then the
// mirrors of the index's hosts.toml, in file order; the upstream last (the
// hosts.toml server, else the index's own API host). cfg is read once, so
// a reload in between cannot mix two configurations.
func (s *Service) endpointsFor(ctx context.Context, cfg *config, index string) ([]*endpoint, error) {
	var eps []*endpoint
	if index == DefaultIndexName {
		for _, m := range cfg.mirrors {
			eps = append(eps, &endpoint{host: m.Host, plainHTTP: m.Scheme == "http", mirror: true, caps: capPull | capResolve})
		}
	}
	rh := cfg.hosts[index]
	if rh != nil {
		for _, m := range rh.mirrors {
			eps = append(eps, hostsEndpoint(m, true))
		}
	}
	if rh != nil && rh.server != nil {
		up := hostsEndpoint(rh.server, false)
		up.caps = capAll // the upstream serves everything, push included
		if _, err := s.transports().forHost(ctx, up.host); err != nil {
			return nil, classify(err, up.host)
		}
		return append(eps, up), nil
	}
	up, err := s.endpointFor(ctx, apiHost(index), false)
	if err != nil {
		return nil, err
	}
	return append(eps, up), nil
}

// hostsEndpoint is the endpoint of a hosts.toml host: its scheme is the
// one written (no probe), its API root the URL's path.
func hostsEndpoint(d *apiHostDef, mirror bool) *endpoint {
	ep := &endpoint{host: d.host, plainHTTP: d.scheme == "http", mirror: mirror, caps: d.caps, header: d.header}
	if d.path != "/v2" {
		ep.root, ep.rooted = d.path, true
	}
	return ep
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

func parseURL(s string) (*url.URL, error) { return url.Parse(s) }

func (s *Service) setUserAgent(req *http.Request) {
	if s.opts.UserAgent != "" {
		req.Header.Set("User-Agent", s.opts.UserAgent)
	}
}

// pathOf is the repository path of a name on its index.
func pathOf(full string) string {
	if i := strings.IndexByte(full, '/'); i >= 0 {
		return full[i+1:]
	}
	return full
}
