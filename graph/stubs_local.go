package graph

// Stubs for the local store; the graph-local work replaces them file by file.

import (
	"context"
	"io"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/types"
)

func (s *Store) ExportImage(ctx context.Context, names []string, w io.Writer) error {
	return errdefs.ErrNotImplemented
}
func (s *Store) LoadImage(ctx context.Context, r io.Reader, quiet bool, out types.ProgressWriter) error {
	return errdefs.ErrNotImplemented
}
