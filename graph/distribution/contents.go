package distribution

import (
	"context"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// LayerIndexer is told of each layer a pull downloads from its first byte
// (graph/contents implements it): the pull copies the compressed bytes into
// w as it writes them, then calls commit once the blob's digest is verified
// and stored, or abort when the download fails. A nil w: not wanted.
type LayerIndexer interface {
	IndexLayer(ctx context.Context, desc ocispec.Descriptor) (w io.Writer, commit func() error, abort func())
}

// RemoteLayers is one platform image of a registry, as the contents room
// reads it: resolved with the caller's credentials, which opened the
// repository its blobs are read from.
type RemoteLayers struct {
	Manifest ocispec.Descriptor
	Layers   []ocispec.Descriptor
	DiffIDs  []digest.Digest
	Blobs    *RemoteBlobs
}

// RemoteBlobs reads the layers of one repository (graph/contents' Blobs).
type RemoteBlobs struct{}

// Open reads the blob whole, verified against desc at EOF.
func (b *RemoteBlobs) Open(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	return nil, fmt.Errorf("remote blobs: %w", errdefs.ErrNotImplemented)
}

// ReadRange reads bytes [off, off+n) of the blob in one single-range request.
func (b *RemoteBlobs) ReadRange(ctx context.Context, desc ocispec.Descriptor, off, n int64) (io.ReadCloser, error) {
	return nil, fmt.Errorf("remote blobs: %w", errdefs.ErrNotImplemented)
}

// Local reports whether the blob is read from the local store.
func (b *RemoteBlobs) Local(desc ocispec.Descriptor) bool { return false }

// RemoteLayers resolves name on its registry as a remote inspect does (the
// same credentials bound to the same registry, the same platform choice)
// and returns the chosen manifest's layers.
func (s *Service) RemoteLayers(ctx context.Context, name string, opts types.FilesOptions) (*RemoteLayers, error) {
	return nil, fmt.Errorf("remote layers: %w", errdefs.ErrNotImplemented)
}
