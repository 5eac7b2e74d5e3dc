package distribution

import (
	"context"
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/events"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/registry"
)

// RemoteManifest returns the manifest bytes as the registry served them and
// their media type: the top level (index or manifest) unless a platform was
// asked for, then the manifest chosen for that platform.
func (s *Service) RemoteManifest(ctx context.Context, name string, opts types.RemoteInspectOptions) ([]byte, string, error) {
	ri, err := s.InspectRemote(ctx, name, opts)
	if err != nil {
		return nil, "", err
	}
	if opts.Platform != nil && ri.ManifestBytes != nil {
		return ri.ManifestBytes, ri.Manifest.MediaType, nil
	}
	return ri.Raw, ri.Descriptor.MediaType, nil
}

// inspectRemote asks the registry; a missing repository or tag becomes the
// same "No such image" a local inspect answers.
func (s *Service) InspectRemote(ctx context.Context, name string, opts types.RemoteInspectOptions) (*registry.RemoteImage, error) {
	svc, err := s.registryService()
	if err != nil {
		return nil, err
	}
	ri, err := svc.Inspect(ctx, registry.InspectRequest{
		Name:        name,
		Platform:    s.platformOr(opts.Platform),
		Credentials: credentials(opts.Auth, opts.MetaHeaders),
	})
	if err != nil {
		if errdefs.IsNotFound(err) && !isPlatformMismatch(err) {
			return nil, fmt.Errorf("No such image: %s%.0w", name, errdefs.ErrNotFound)
		}
		return nil, err
	}
	if ri == nil {
		return nil, fmt.Errorf("No such image: %s%.0w", name, errdefs.ErrNotFound)
	}
	return ri, nil
}

// isPlatformMismatch tells SelectManifest's "no matching manifest" (which
// names the platforms that exist, and should reach the user as is) from a
// missing repository or tag.
func isPlatformMismatch(err error) bool {
	return strings.Contains(err.Error(), "no matching manifest")
}

// logEvent records an image event when the store has an event log.
func (s *Service) logEvent(ctx context.Context, actor string, action events.Action, attrs map[string]string) {
	if s.events != nil {
		s.events.LogImageEvent(ctx, actor, action, attrs)
	}
}
