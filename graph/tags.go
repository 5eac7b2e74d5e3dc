package graph

import (
	"context"

	"github.com/wharfproject/wharf/api/types"
)

// RemoteTags lists a repository's tags in its registry (GET /wharf/images/{name}/tags).
func (s *Store) RemoteTags(ctx context.Context, name string, opts types.RemoteTagsOptions) (*types.RemoteTags, error) {
	return s.dist.RemoteTags(ctx, name, opts)
}
