package daemon

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/server"
	"github.com/wharfproject/wharf/api/types"
)

var _ server.TagsBackend = (*Daemon)(nil)

// RemoteTags implements server.TagsBackend (GET /wharf/images/{name}/tags).
func (d *Daemon) RemoteTags(ctx context.Context, name string, opts types.RemoteTagsOptions) (*types.RemoteTags, error) {
	tb, ok := d.imageStore.(server.TagsBackend)
	if !ok {
		return nil, fmt.Errorf("this image store cannot list tags%.0w", errdefs.ErrNotImplemented)
	}
	return tb.RemoteTags(ctx, name, opts)
}
