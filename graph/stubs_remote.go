package graph

// Stubs for the registry side; the graph-remote work replaces them.

import (
	"context"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
)

func (s *Store) PushImage(ctx context.Context, opts types.PushOptions, out types.ProgressWriter) error {
	return errdefs.ErrNotImplemented
}
func (s *Store) DistributionInspect(ctx context.Context, name string, opts types.RemoteInspectOptions) (*registry.DistributionInspect, error) {
	return nil, errdefs.ErrNotImplemented
}
func (s *Store) Login(ctx context.Context, auth *registry.AuthConfig) (string, error) {
	return "", errdefs.ErrNotImplemented
}
