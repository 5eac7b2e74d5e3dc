package registry

import (
	"github.com/wharfproject/wharf/registry/transport"
)

// RateLimit is what a registry host's answers said last of its rate limit
// to one credential identity (registry/transport/ratelimit.go).
type RateLimit = transport.RateLimit

// HostBackoff is a registry host backed off now by a 429 or 503 with
// Retry-After (registry/transport/gate.go).
type HostBackoff = transport.HostBackoff

// RateLimits is, per registry host, the rate limit its answers said last
// (to whichever identity), sorted by host: /info and the metrics show it.
func (s *Service) RateLimits() []RateLimit { return s.http.RateLimits() }

// Backoffs lists the registry hosts backed off now, sorted by host.
func (s *Service) Backoffs() []HostBackoff { return s.http.Backoffs() }

// rateLimit is the rate limit the host that served this repository's last
// read (else its upstream) said last to this repository's identity; nil
// when it never sent one. A content-cache answer sends no request: the
// state shown is then the last one seen, with its time.
func (r *Repository) rateLimit() *RateLimit {
	host := r.servedBy()
	if host == "" {
		host = r.upstream.host
	}
	for _, ep := range r.endpoints {
		if ep.host != host {
			continue
		}
		if rl, ok := ep.client.RateLimit(host); ok {
			return &rl
		}
	}
	return nil
}
