package registry

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// endpoint is one API host a repository is read from or written to.
//
// Scheme policy (decided here, documented in docs/architecture.md):
//   - secure registries: HTTPS only, verified (system roots + certs dir);
//   - loopback hosts (127.0.0.0/8, ::1, localhost): plain HTTP directly. A
//     registry on this machine is a test or a cache; an HTTPS attempt first
//     would send a TLS hello that the registry logs as a bad request and
//     costs a round trip on every cold start;
//   - other insecure registries: like dockerd, HTTPS first (unverified), and
//     plain HTTP when the host does not speak TLS. The answer is probed once
//     with GET /v2/ and remembered per Service, so it costs one request per
//     host per daemon lifetime.
type endpoint struct {
	host      string // host[:port] of the API
	plainHTTP bool
	mirror    bool
}

func (e *endpoint) baseURL() string {
	if e.plainHTTP {
		return "http://" + e.host
	}
	return "https://" + e.host
}

// apiHost is where an index's v2 API lives.
func apiHost(index string) string {
	if normaliseIndexName(index) == DefaultIndexName {
		return dockerHubAPIHost
	}
	return index
}

// endpointFor decides the scheme for host.
func (s *Service) endpointFor(ctx context.Context, host string, mirror bool) (*endpoint, error) {
	ep := &endpoint{host: host, mirror: mirror}
	if s.cfg.secure(host) {
		return ep, nil
	}
	if isLoopbackHost(host) {
		ep.plainHTTP = true
		return ep, nil
	}
	s.mu.Lock()
	plain, known := s.plainHTTP[host]
	s.mu.Unlock()
	if !known {
		var ok bool
		plain, ok = s.probeScheme(ctx, host)
		if ok {
			s.mu.Lock()
			if len(s.plainHTTP) >= maxRememberedHosts {
				clear(s.plainHTTP)
			}
			s.plainHTTP[host] = plain
			s.mu.Unlock()
		}
	}
	ep.plainHTTP = plain
	return ep, nil
}

// probeScheme asks https://host/v2/ and, if the host does not speak TLS,
// http://host/v2/. ok is false when neither answered (nothing is remembered).
func (s *Service) probeScheme(ctx context.Context, host string) (plain, ok bool) {
	try := func(scheme string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+host+"/v2/", nil)
		if err != nil {
			return err
		}
		s.setUserAgent(req)
		resp, err := s.client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		return nil
	}
	err := try("https")
	if err == nil {
		return false, true
	}
	if !errTLSMismatch(err) {
		return false, false
	}
	if err := try("http"); err == nil {
		s.log.WithField("registry", host).Debug("insecure registry does not speak TLS; using plain HTTP")
		return true, true
	}
	return false, false
}

// mirrorEndpoints are the docker.io mirrors, in configured order.
func (s *Service) mirrorEndpoints() []*endpoint {
	out := make([]*endpoint, 0, len(s.cfg.mirrors))
	for _, m := range s.cfg.mirrors {
		out = append(out, &endpoint{host: m.Host, plainHTTP: m.Scheme == "http", mirror: true})
	}
	return out
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
