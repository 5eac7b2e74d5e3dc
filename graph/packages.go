package graph

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/contents"
)

// ImagePackages lists the packages of an image, local or remote
// (graph/packages).
func (s *Service) ImagePackages(ctx context.Context, name string, opts types.PackagesOptions) (*types.ImagePackages, error) {
	return nil, fmt.Errorf("packages: %w", errdefs.ErrNotImplemented) // seam
}

// packagesOf lists the packages of an image already resolved (a diff's
// side): its layers through the contents room, its config for the
// platform.
func (s *Service) packagesOf(ctx context.Context, img *contents.Image, cfg *ocispec.Image) (*types.ImagePackages, error) {
	return nil, fmt.Errorf("packages: %w", errdefs.ErrNotImplemented) // seam
}
