package distribution

import (
	"context"
	"net/http"
	"time"

	"github.com/distribution/reference"
	registrytypes "github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/registry"
)

// RemoteTag asks ref's registry what ref's tag names now (the update
// check): one HEAD, or nothing when the tag freshness cache holds an answer
// younger than maxAge for this repository and identity. ref is a local
// tag, fully qualified: no candidate search, the registry it names is the
// one asked, and auth goes there only when it belongs to it. The
// repository is returned for a follow-up read (an index, by digest).
func (s *Service) RemoteTag(ctx context.Context, ref reference.NamedTagged, auth *registrytypes.AuthConfig, meta http.Header, maxAge time.Duration) (registry.TagAnswer, *registry.Repository, error) {
	svc, err := s.registryService()
	if err != nil {
		return registry.TagAnswer{}, nil, err
	}
	repo, err := svc.Repository(ctx, reference.TrimNamed(ref), credentials(auth, meta))
	if err != nil {
		return registry.TagAnswer{}, nil, err
	}
	ans, err := repo.HeadTag(ctx, ref.Tag(), maxAge)
	if err != nil {
		return registry.TagAnswer{}, nil, err
	}
	return ans, repo, nil
}
