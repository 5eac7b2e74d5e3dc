package distribution

import (
	"context"

	registrytypes "github.com/moby/moby/api/types/registry"
)

// Login validates auth against its registry and returns the identity token
// the registry issued, if any. The credentials are not stored: the client
// keeps them, as with dockerd.
func (s *Service) Login(ctx context.Context, auth *registrytypes.AuthConfig) (string, error) {
	svc, err := s.registryService()
	if err != nil {
		return "", err
	}
	return svc.Login(ctx, auth)
}
