package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/wharfproject/wharf/registry/hosts"
)

// The scheme probe: which scheme an insecure registry speaks, found by a
// TLS handshake alone, once per host (docs/architecture.md, "Scheme
// policy").

// The scheme an insecure registry speaks (hostEntry.scheme).
const (
	schemeUnknown int32 = iota
	schemeHTTPS
	schemeHTTP
)

// challengeLearner records the challenges of a 401 from host's /v2/ API
// (challengeMemo.learn).
type challengeLearner interface {
	learn(host string, values []string) (Challenge, bool)
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
		return schemeUnknown, false, t.tm.named(ctx, err)
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
	// A silent server ends at the handshake's deadline: say which bound.
	return schemeUnknown, false, t.tm.named(ctx, err)
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
// own answer. The probe is a handshake the server's HTTP stack refuses at
// once, while the ping is served by the registry itself, which may take
// tens of milliseconds (object storage, an authenticating proxy, a loaded
// machine). Giving up on the ping costs an anonymous request, a 401 and
// a retry: at least one of the registry's own answer times, so waiting up
// to 500 ms loses nothing on any registry that answers /v2/ within that,
// and a /v2/ that hangs costs 500 ms once per host (the scheme is
// remembered; the challenge is then learnt from the first 401).
const minPingWait = 500 * time.Millisecond

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
