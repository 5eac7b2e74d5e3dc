package graph

// Stubs for the local store; the graph-local work replaces them file by file.

import (
	"context"
	"io"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
)

// --- api/server ImageBackend

func (s *Store) Images(ctx context.Context, opts types.ImageListOptions) ([]image.Summary, error) {
	return nil, errdefs.ErrNotImplemented
}
func (s *Store) TagImage(ctx context.Context, name, repo, tag string) error {
	return errdefs.ErrNotImplemented
}
func (s *Store) ImageDelete(ctx context.Context, name string, force, prune bool) ([]image.DeleteResponse, error) {
	return nil, errdefs.ErrNotImplemented
}
func (s *Store) ImportImage(ctx context.Context, src io.Reader, opts types.ImportOptions, out types.ProgressWriter) error {
	return errdefs.ErrNotImplemented
}
func (s *Store) ExportImage(ctx context.Context, names []string, w io.Writer) error {
	return errdefs.ErrNotImplemented
}
func (s *Store) LoadImage(ctx context.Context, r io.Reader, quiet bool, out types.ProgressWriter) error {
	return errdefs.ErrNotImplemented
}
func (s *Store) ImagesPrune(ctx context.Context, filters types.Filters) (*image.PruneReport, error) {
	return nil, errdefs.ErrNotImplemented
}

// DiskUsage returns the bytes of all stored blobs and the image summaries.
func (s *Store) DiskUsage(ctx context.Context) (*types.DiskUsage, error) {
	return nil, errdefs.ErrNotImplemented
}
