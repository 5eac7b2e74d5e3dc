package packages

import (
	"context"
	"io"
	"sync/atomic"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/contents"
	"github.com/wharfproject/wharf/internal/countio"
)

// OfImage lists the packages of an image already resolved (by name, or a
// diff's side): its merged view read through the contents room. BytesRead
// counts the layer bytes read from a registry.
func OfImage(ctx context.Context, room *contents.Room, img *contents.Image) (*types.ImagePackages, error) {
	counted := *img.Wanting(Wanted)
	blobs := &countingBlobs{Blobs: img.Blobs}
	counted.Blobs = blobs
	c, err := Read(ctx, &imageFS{room: room, img: &counted}, DefaultLimits())
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

// imageFS is an image's merged view as the catalogers read it.
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
	return &countio.ReadCloser{ReadCloser: rc, Add: func(n int64) { b.n.Add(n) }}
}
