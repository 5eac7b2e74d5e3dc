package distribution

import (
	"context"
	"encoding/json"
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
	res, err := s.resolveRemote(ctx, tn, credentials(opts.Auth, opts.MetaHeaders))
	if err != nil {
		return nil, err
	}
	raw, err := res.Repo.FetchManifest(ctx, res.Desc)
	if err != nil {
		return nil, err
	}
	mt := imagespec.Sniff(raw)
	if mt == "" {
		mt = res.Desc.MediaType
	}
	out := &registrytypes.DistributionInspect{
		Descriptor: ocispec.Descriptor{MediaType: mt, Digest: res.Desc.Digest, Size: int64(len(raw))},
		Platforms:  []ocispec.Platform{},
	}
	switch {
	case imagespec.IsSchema1(mt):
		return nil, fmt.Errorf("%s: schema1 manifests are not supported%.0w", name, errdefs.ErrNotImplemented)
	case imagespec.IsIndex(mt):
		var idx ocispec.Index
		if err := json.Unmarshal(raw, &idx); err != nil {
			return nil, fmt.Errorf("parse index %s: %w", res.Desc.Digest, err)
		}
		for _, d := range idx.Manifests {
			if d.Platform != nil {
				out.Platforms = append(out.Platforms, *d.Platform)
			}
		}
	default:
		var man ocispec.Manifest
		if err := json.Unmarshal(raw, &man); err != nil {
			return nil, fmt.Errorf("parse manifest %s: %w", res.Desc.Digest, err)
		}
		cfg, err := res.Repo.FetchConfig(ctx, man.Config)
		if err != nil {
			return nil, err
		}
		if p := imagespec.ConfigPlatform(cfg); p != nil {
			out.Platforms = append(out.Platforms, *p)
		}
	}
	return out, nil
}
