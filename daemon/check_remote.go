package daemon

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/server"
	"github.com/wharfproject/wharf/api/types"
)

var _ server.RemoteCheckBackend = (*Daemon)(nil)

// remoteChecker is the update check of graph.Store.
type remoteChecker interface {
	CheckRemote(ctx context.Context, opts types.RemoteCheckOptions, emit func(types.RemoteCheckResult) error) error
}

// CheckRemote implements server.RemoteCheckBackend
// (POST /wharf/images/check-remote).
func (d *Daemon) CheckRemote(ctx context.Context, opts types.RemoteCheckOptions, emit func(types.RemoteCheckResult) error) error {
	rc, ok := d.imageStore.(remoteChecker)
	if !ok {
		return fmt.Errorf("this image store has no update check%.0w", errdefs.ErrNotImplemented)
	}
	return rc.CheckRemote(ctx, opts, emit)
}
