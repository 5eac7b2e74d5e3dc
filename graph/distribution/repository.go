package distribution

import (
	"context"
	"net/http"

	"github.com/distribution/reference"
	registrytypes "github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/registry"
)

// The registry surface graph/mirror plans and moves with (a catalog, tag
// listings, HEADs, manifests, blobs, rate limits and the error classes),
// named here so that inside graph only this room imports registry.

// Repository is one repository at a registry, as graph/mirror lists,
// HEADs, reads and writes it.
type Repository = registry.Repository

// Referrer is one entry of a referrers listing, with the listing that
// found it (PlanReferrers).
type Referrer = registry.Referrer

// RateLimit is the rate limit a registry's answers said last.
type RateLimit = registry.RateLimit

// The registry's typed errors a sync failure is classified by.
var (
	ErrDenied         = registry.ErrDenied
	ErrDigestMismatch = registry.ErrDigestMismatch
	ErrUpstream       = registry.ErrUpstream
	ErrUnauthorized   = registry.ErrUnauthorized
)

// RequireRegistry is nil, or ErrNoRegistry when the daemon runs without
// registry access.
func (s *Service) RequireRegistry() error {
	_, err := s.registryService()
	return err
}

// Repository is name's repository, reached with the credentials of regs
// (per registry host) and meta's headers.
func (s *Service) Repository(ctx context.Context, name reference.Named, regs map[string]registrytypes.AuthConfig, meta http.Header) (*Repository, error) {
	svc, err := s.registryService()
	if err != nil {
		return nil, err
	}
	return svc.Repository(ctx, name, credentials(nil, regs, meta))
}

// RateLimits is, per registry host, the rate limit its answers said last;
// none without registry access.
func (s *Service) RateLimits() []RateLimit {
	if s.reg == nil {
		return nil
	}
	return s.reg.RateLimits()
}

// ListTags is every tag of repo, as the registry lists them.
func ListTags(ctx context.Context, repo *Repository) ([]string, error) {
	return repo.Tags(ctx, registry.TagsOptions{})
}
