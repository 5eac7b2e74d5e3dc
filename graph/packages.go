package graph

import (
	"context"
	"io"
	"sync/atomic"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/contents"
	"github.com/wharfproject/wharf/graph/packages"
)

// ImagePackages lists the packages of an image, local or remote
// (graph/packages), resolved as ls and cat resolve it: from an SBOM
// attestation attached to it when there is one (and the signature policy
// accepts the image), otherwise from its package databases and binaries.
func (s *Service) ImagePackages(ctx context.Context, name string, opts types.PackagesOptions) (*types.ImagePackages, error) {
	img, err := s.contentsImage(ctx, name, types.FilesOptions{
		Platform: opts.Platform, Remote: opts.Remote,
		Auth: opts.Auth, Registries: opts.Registries, MetaHeaders: opts.MetaHeaders,
	})
	if err != nil {
		return nil, err
	}
	out, err := s.packagesFromAttestation(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	if out == nil {
		if out, err = s.packagesOf(ctx, img, nil); err != nil {
			return nil, err
		}
	}
	out.Image, out.Digest = name, img.Manifest.Digest.String()
	return out, nil
}

// packagesOf lists the packages of an image already resolved (a diff's
// side): its layers through the contents room, its config for the
// platform.
func (s *Service) packagesOf(ctx context.Context, img *contents.Image, cfg *ocispec.Image) (*types.ImagePackages, error) {
	counted := *img
	blobs := &countingBlobs{Blobs: img.Blobs}
	counted.Blobs = blobs
	c, err := packages.Read(ctx, &imageFS{room: s.contents, img: &counted}, packages.DefaultLimits())
	if err != nil {
		return nil, err
	}
	out := &types.ImagePackages{
		Digest:    img.Manifest.Digest.String(),
		Source:    types.PackagesFromDatabases,
		Packages:  c.Packages,
		BytesRead: blobs.n.Load(),
	}
	if c.Distro != nil {
		out.Distro = &types.Distro{ID: c.Distro.ID, VersionID: c.Distro.VersionID, Name: c.Distro.Name}
	}
	return out, nil
}

// imageFS is an image's merged view as the packages room reads it.
type imageFS struct {
	room *contents.Room
	img  *contents.Image
}

func (f *imageFS) Copy(ctx context.Context, p string, w io.Writer) error {
	return f.room.Cat(ctx, f.img, p, w)
}

func (f *imageFS) Walk(ctx context.Context, fn func(types.FileEntry) error) error {
	return f.room.Files(ctx, f.img, types.FilesOptions{Path: "/", Recursive: true}, fn)
}

// countingBlobs counts the bytes of layer blobs read from a registry (a
// blob the store holds is a local read and not counted).
type countingBlobs struct {
	contents.Blobs
	n atomic.Int64
}

func (b *countingBlobs) Open(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	rc, err := b.Blobs.Open(ctx, desc)
	return b.count(desc, rc), err
}

func (b *countingBlobs) ReadRange(ctx context.Context, desc ocispec.Descriptor, off, n int64) (io.ReadCloser, error) {
	rc, err := b.Blobs.ReadRange(ctx, desc, off, n)
	return b.count(desc, rc), err
}

func (b *countingBlobs) count(desc ocispec.Descriptor, rc io.ReadCloser) io.ReadCloser {
	if rc == nil || b.Blobs.Local(desc) {
		return rc
	}
	return &countingReader{ReadCloser: rc, n: &b.n}
}

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}
