package graph

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/types"
)

// ImageDiff compares two images, each local, remote or an archive, by the
// sections req asks for (graph/diff).
func (s *Service) ImageDiff(ctx context.Context, req types.DiffRequest) (*types.ImageDiff, error) {
	return nil, fmt.Errorf("diff: %w", errdefs.ErrNotImplemented) // seam
}
