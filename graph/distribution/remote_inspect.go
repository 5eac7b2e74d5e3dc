package distribution

import (
	"context"
	"errors"
	"fmt"

	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/registry"
)

// RemoteManifest answers inspect --raw: the top-level document exactly as
// the registry served it, with the registry's descriptor (its digest is what
// NAME@digest pins: not the hash of the bytes for signed schema1, sha512 for
// a sha512 reference). Nothing else is fetched — no platform is chosen, no
// config read — unless a platform is asked for: then the manifest chosen for
// it. Budget: cold ≤ 3 requests with a token, warm 1 (a HEAD).
func (s *Service) RemoteManifest(ctx context.Context, name string, opts types.RemoteInspectOptions) ([]byte, ocispec.Descriptor, error) {
	svc, err := s.registryService()
	if err != nil {
		return nil, ocispec.Descriptor{}, err
	}
	res, err := svc.FindImage(ctx, name, credentials(opts.Auth, opts.Registries, opts.MetaHeaders))
	if err != nil {
		return nil, ocispec.Descriptor{}, noSuchImage(name, err)
	}
	if opts.Platform != nil {
		desc, b, err := res.PlatformManifest(ctx, s.platformOr(opts.Platform))
		return b, desc, err
	}
	return res.Raw, res.Descriptor, nil
}

// noSuchImage words a missing repository or tag as a local inspect does;
// a platform an index lacks is reported as is (it names the platforms
// there are).
func noSuchImage(name string, err error) error {
	if errdefs.IsNotFound(err) && !errors.Is(err, registry.ErrNoMatchingPlatform) {
		return fmt.Errorf("No such image: %s%.0w", name, errdefs.ErrNotFound)
	}
	return err
}

// InspectRemote asks the registry; a missing repository or tag becomes the
// same "No such image" a local inspect answers.
func (s *Service) InspectRemote(ctx context.Context, name string, opts types.RemoteInspectOptions) (*registry.RemoteImage, error) {
	svc, err := s.registryService()
	if err != nil {
		return nil, err
	}
	req := registry.InspectRequest{
		Name:        name,
		Platform:    s.platformOr(opts.Platform),
		Credentials: credentials(opts.Auth, opts.Registries, opts.MetaHeaders),
	}
	if opts.Referrers != nil {
		req.Referrers = &registry.ReferrersOptions{ArtifactType: opts.Referrers.ArtifactType}
	}
	ri, err := svc.Inspect(ctx, req)
	if err != nil {
		return nil, noSuchImage(name, err)
	}
	if ri == nil {
		return nil, fmt.Errorf("No such image: %s%.0w", name, errdefs.ErrNotFound)
	}
	return ri, nil
}
