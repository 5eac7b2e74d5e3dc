package graph

import (
	"context"

	"github.com/distribution/reference"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/diff"
	"github.com/wharfproject/wharf/imagespec"
)

// PullCost is what `wharf pull NAME` would download now (`wharf pull
// --dry-run`, GET /wharf/images/{name}/pull-cost): the layers of the
// manifest a pull would choose that the store lacks, and the config when
// it lacks that too. It asks the registry only for the manifest
// (distribution.PullTarget: one HEAD and at most one manifest GET for a
// single-platform tag, one GET more for an index's platform manifest when
// it is not cached) and reads no blob. The count is the diff's pull
// section's (diff.PullCost); a partial download kept from a cut pull is
// counted whole: the pull resumes it and downloads less.
func (s *Service) PullCost(ctx context.Context, name string, opts types.PullCostOptions) (*types.PullCost, error) {
	t, err := s.dist.PullTarget(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	out := diff.PullCost(t.Layers, t.Config, s.images.HasBlob)
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
