package registry

import (
	"context"
	"hash"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/upload"
)

// The one blob-transfer path of push (bytes from the local store) and copy
// (bytes streamed from another registry) is registry/upload's protocol:
// HEAD, cross-repository mounts, then an upload session that is completed
// or cancelled. This file hands it the repository's upstream (target)
// and the mount sources this daemon knows (transfer_mount.go).

// BlobTransfer is how a blob reached the destination.
type BlobTransfer = upload.How

// How TransferBlob made the registry have a blob.
const (
	BlobExisted  = upload.Existed  // HEAD found it: nothing sent
	BlobMounted  = upload.Mounted  // cross-repository mount: no bytes sent
	BlobUploaded = upload.Uploaded // the bytes were uploaded
)

// BlobOpener opens the bytes of a blob for upload from offset on (0: the
// whole blob): upload.Opener. FetchBlob's reader verifies itself, so a
// copy hashes each byte once; OpenBlobAt serves a resumed upload's offset.
type BlobOpener = upload.Opener

// uploadHash, when set, makes the hashes of the bytes uploaded (a test
// counts what they hash: one pass over a blob, not two).
var uploadHash func(digest.Algorithm) hash.Hash

// TransferBlob makes this repository hold desc. mountFrom are repository
// paths on this registry the caller knows hold the blob (copy: the source
// repository; push: the repositories the image was pulled from or pushed
// to); the repositories where this daemon has read or written the blob come
// first. At most upload.MaxMountSources mounts are tried; every refused
// mount's session but the last is cancelled, and the last carries the
// upload. from is the repository a mounted blob came from.
func (r *Repository) TransferBlob(ctx context.Context, desc ocispec.Descriptor, mountFrom []string, open BlobOpener) (how BlobTransfer, from string, err error) {
	if err := validateDescriptor(desc); err != nil {
		return 0, "", err
	}
	sources := r.mountSources(desc.Digest, mountFrom)
	how, from, err = upload.Transfer(ctx, target{r, r.upstream}, desc, sources, open, upload.Options{
		WholeMax: r.svc.wholeUploadMax, ResumeWait: r.svc.uploadBackoff, Hash: uploadHash, Log: r.svc.log,
	})
	if err != nil {
		return 0, "", err
	}
	r.svc.blobs.add(desc.Digest, r.info.Index.Name, r.path)
	return how, from, nil
}
