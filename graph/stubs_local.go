package graph

// Stubs for the local store; the graph-local work replaces them file by file.

import (
	"context"
	"io"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

type localStore struct{}

func newLocalStore(ctx context.Context, opts Options) (*localStore, error) { return &localStore{}, nil }
func (l *localStore) close() error                                          { return nil }

// --- content (used by pull, push, load, import)

// HasBlob reports whether the blob is in the store.
func (s *Store) HasBlob(d digest.Digest) bool { return false }

// WriteBlob stores r as the blob desc, verifying size and digest while
// streaming; the blob becomes visible only once verified (atomic rename).
// Writing a blob that exists is a no-op that drains nothing.
func (s *Store) WriteBlob(ctx context.Context, desc ocispec.Descriptor, r io.Reader) error {
	return errdefs.ErrNotImplemented
}

// OpenBlob opens a stored blob.
func (s *Store) OpenBlob(d digest.Digest) (io.ReadCloser, int64, error) {
	return nil, 0, errdefs.ErrNotImplemented
}

// ReadBlob reads a whole stored blob of at most max bytes.
func (s *Store) ReadBlob(d digest.Digest, max int64) ([]byte, error) {
	return nil, errdefs.ErrNotImplemented
}

// --- image records

// PutImage records img and points its RepoTags and RepoDigests at it (moving
// them from any other image, which becomes dangling when it loses its last
// reference). Every blob it names must already be stored.
func (s *Store) PutImage(ctx context.Context, img ImageRecord) error { return errdefs.ErrNotImplemented }

// Lookup finds a local image by name, name:tag, name@digest, ID or unique short ID.
func (s *Store) Lookup(ctx context.Context, name string) (*ImageRecord, error) {
	return nil, errdefs.ErrNotImplemented
}

// ImagesByRepository returns the images tagged in repository (fully
// qualified name) with their tags, for push.
func (s *Store) ImagesByRepository(ctx context.Context, repo string) (map[string]*ImageRecord, error) {
	return nil, errdefs.ErrNotImplemented
}

// BuildInspect builds the ImageInspect of an image; local and remote inspect
// both call it, so the two agree field for field.
func BuildInspect(src InspectSource) (*types.ImageInspect, error) { return nil, errdefs.ErrNotImplemented }

// --- api/server ImageBackend

func (s *Store) Images(ctx context.Context, opts types.ImageListOptions) ([]image.Summary, error) {
	return nil, errdefs.ErrNotImplemented
}
func (s *Store) ImageInspect(ctx context.Context, name string, opts types.InspectOptions) (*types.ImageInspect, error) {
	return nil, errdefs.ErrNotImplemented
}
func (s *Store) ImageHistory(ctx context.Context, name string, platform *ocispec.Platform) ([]image.HistoryResponseItem, error) {
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

// Count returns the number of images (for /info).
func (s *Store) Count() int { return 0 }
