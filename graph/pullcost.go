package graph

import (
	"context"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/imagespec"
)

// PullCost is what `wharf pull NAME` would download now (`wharf pull
// --dry-run`, GET /wharf/images/{name}/pull-cost): the layers of the
// manifest a pull would choose that the store lacks, and the config when
// it lacks that too. It asks the registry only for the manifest
// (distribution.PullTarget: one HEAD and at most one manifest GET for a
// single-platform tag, one GET more for an index's platform manifest when
// it is not cached) and reads no blob.
func (s *Service) PullCost(ctx context.Context, name string, opts types.PullCostOptions) (*types.PullCost, error) {
	t, err := s.dist.PullTarget(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	out := s.pullCostOf(t.Config, t.Layers)
	out.Image = reference.FamiliarString(t.Ref)
	out.Digest = t.Top.Digest.String()
	if t.Manifest.Digest != t.Top.Digest {
		out.Platform = imagespec.FormatPlatform(t.Platform)
		if p := t.Manifest.Platform; p != nil {
			out.Platform = imagespec.FormatPlatform(*p)
		}
	}
	return out, nil
}

// pullCostOf is the cost of a pull of an image with config and layers,
// given what the store holds now: each distinct layer it lacks, in the
// manifest's order (a layer listed twice is downloaded once), plus the
// config when it lacks that. A partial download kept from a cut pull is
// counted whole: the pull resumes it and downloads less.
func (s *Service) pullCostOf(config ocispec.Descriptor, layers []ocispec.Descriptor) *types.PullCost {
	out := &types.PullCost{}
	seen := make(map[digest.Digest]bool, len(layers))
	for _, l := range layers {
		if seen[l.Digest] {
			continue
		}
		seen[l.Digest] = true
		out.TotalLayers++
		if s.images.HasBlob(l.Digest) {
			out.Present++
			continue
		}
		out.Layers = append(out.Layers, types.DiffLayer{Digest: l.Digest.String(), Size: l.Size})
		out.Bytes += l.Size
	}
	if config.Digest != "" && !s.images.HasBlob(config.Digest) {
		out.Config = config.Size
		out.Bytes += config.Size
	}
	return out
}
