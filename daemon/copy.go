package daemon

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/server"
	"github.com/wharfproject/wharf/api/types"
)

var _ server.CopyBackend = (*Daemon)(nil)

// imageCopier is graph.Store's registry-to-registry copy.
type imageCopier interface {
	CopyImage(ctx context.Context, opts types.CopyOptions, out types.ProgressWriter) error
}

// CopyImage implements server.CopyBackend (POST /wharf/images/copy).
func (d *Daemon) CopyImage(ctx context.Context, opts types.CopyOptions, out types.ProgressWriter) error {
	c, ok := d.imageStore.(imageCopier)
	if !ok {
		return fmt.Errorf("this image store cannot copy%.0w", errdefs.ErrNotImplemented)
	}
	return c.CopyImage(ctx, opts, out)
}
