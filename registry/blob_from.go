package registry

import (
	"context"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// OpenBlobAt streams a blob from offset on: the BlobOpener of a copy, whose
// upload to DST may resume mid-blob (TransferBlob). From 0 it is FetchBlob
// (verified as it streams, and saying so: TransferBlob then hashes
// nothing itself). From an offset it is the same GET with Range
// and the same resuming body as FetchBlob's (blobs.Get, blobs.Open): a
// 206 must start at offset, a 200 (a registry that ignores Range) has its
// head dropped, a body that breaks is asked again from where it broke. The
// bytes are not verified here — the first offset bytes are not read —
// TransferBlob, once an upload resumed, hashes the whole stream (the first
// offset bytes reread from 0) before it commits.
func (r *Repository) OpenBlobAt(ctx context.Context, desc ocispec.Descriptor, offset int64) (io.ReadCloser, error) {
	if offset == 0 {
		return r.FetchBlob(ctx, desc)
	}
	if err := validateDescriptor(desc); err != nil {
		return nil, err
	}
	if offset < 0 || offset > desc.Size {
		return nil, fmt.Errorf("blob %s: offset %d outside its %d bytes%.0w", desc.Digest, offset, desc.Size, errdefs.ErrInvalidArgument)
	}
	var out io.ReadCloser
	err := r.readEach(ctx, func(ep *repoEndpoint) error {
		rb, err := r.openResuming(ctx, ep, desc, offset, true)
		if err != nil {
			return err
		}
		out = rb
		return nil
	})
	return out, err
}
