package registry

import (
	"context"
	"net/http"
	"strings"

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

// endpointFor sets host up (transport.Stack.Scheme) and decides its scheme; ping:
// whether the scheme probe may send its plain-HTTP GET /v2/ beside it
// (schemeOf), which pays only when host is the first asked.
func (s *Service) endpointFor(ctx context.Context, host string, mirror, ping bool) (*endpoint, error) {
	plain, err := s.http.Scheme(ctx, host, ping)
	if err != nil {
		return nil, err
	}
	return &endpoint{host: host, mirror: mirror, caps: hosts.CapAll, plainHTTP: plain}, nil
}

// endpointsFor are the endpoints of index, in the order reads try them
// (hosts.Config.Endpoints), each set up (transport.Stack.SetUp) and, for the
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
			if err := s.http.SetUp(ctx, d.Host); err != nil {
				return nil, err
			}
		}
		eps = append(eps, &endpoint{host: d.Host, plainHTTP: d.PlainHTTP, mirror: d.Mirror, root: d.Root, rooted: d.Rooted, caps: d.Caps, header: d.Header})
	}
	return eps, nil
}

// rootRewrite sends the /v2/… requests of one host to its API root
// (every URL is built as scheme://host/v2/…). Other hosts (a token
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
