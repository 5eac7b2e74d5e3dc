package distribution

import (
	"context"
	"fmt"
	"regexp"

	"github.com/containerd/errdefs"
	registrytypes "github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/imagespec"
)

var fullImageID = regexp.MustCompile(`^(sha256:)?[a-f0-9]{64}$`)

// DistributionInspect answers GET /distribution/{name}/json as dockerd
// does: the top-level descriptor with its real media type and size, and the
// platforms it offers — every index entry's, or, for a single manifest, the
// one in its config. Platform manifests of an index are not fetched.
func (s *Service) DistributionInspect(ctx context.Context, name string, opts types.RemoteInspectOptions) (*registrytypes.DistributionInspect, error) {
	// A bare image ID names nothing on a registry (dockerd's wording).
	if fullImageID.MatchString(name) {
		return nil, fmt.Errorf("no manifest found for full image ID%.0w", errdefs.ErrInvalidArgument)
	}
	tn, err := splitTypedName(name)
	if err != nil {
		return nil, err
	}
	if tn.pin() == "" {
		tn.Tag = "latest"
	}
	svc, err := s.registryService()
	if err != nil {
		return nil, err
	}
	res, err := findByName(ctx, svc, tn.String(), credentials(opts.Auth, opts.Registries, opts.MetaHeaders))
	if err != nil {
		return nil, err
	}
	out := &registrytypes.DistributionInspect{
		Descriptor: res.Descriptor,
		Platforms:  []ocispec.Platform{},
	}
	switch {
	case imagespec.IsSchema1(res.Descriptor.MediaType):
		return nil, fmt.Errorf("%s: schema1 manifests are not supported%.0w", name, errdefs.ErrNotImplemented)
	case res.Index != nil:
		for _, d := range res.Index.Manifests {
			if d.Platform != nil {
				out.Platforms = append(out.Platforms, *d.Platform)
			}
		}
	default:
		// One manifest: its platform is in its config (one more request
		// when the config is not cached; the platform entries of an index
		// cost nothing).
		img, err := res.Image(ctx, ocispec.Platform{})
		if err != nil {
			return nil, err
		}
		if p := imagespec.ConfigPlatform(img.ConfigBytes); p != nil {
			out.Platforms = append(out.Platforms, *p)
		}
	}
	return out, nil
}
