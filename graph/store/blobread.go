package store

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// OpenBlobVerified opens the stored blob desc names for one whole read
// that fails in place of io.EOF unless its bytes are desc's (size and
// digest): a disk that rotted fails the read instead of feeding what is
// built from it. NotFound when the store does not hold it.
func (s *Store) OpenBlobVerified(desc ocispec.Descriptor) (io.ReadCloser, error) {
	f, err := s.openSized(desc)
	if err != nil {
		return nil, err
	}
	return &verifiedFile{f: f, desc: desc, d: desc.Digest.Algorithm().Digester()}, nil
}

// OpenBlobSection opens bytes [off, off+n) of the stored blob desc names.
func (s *Store) OpenBlobSection(desc ocispec.Descriptor, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 || off > desc.Size || n > desc.Size-off {
		return nil, fmt.Errorf("blob %s: range [%d, +%d) outside its %d bytes%.0w", desc.Digest, off, n, desc.Size, errdefs.ErrInvalidArgument)
	}
	f, err := s.openSized(desc)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, off, n), f}, nil
}

// openSized opens the stored blob desc names (OpenBlob refuses a digest
// that is not valid before anything is hashed), refusing a stored size
// that is not desc's.
func (s *Store) openSized(desc ocispec.Descriptor) (*os.File, error) {
	f, size, err := s.OpenBlob(desc.Digest)
	if err != nil {
		return nil, err
	}
	if size != desc.Size {
		f.Close()
		return nil, fmt.Errorf("blob %s: stored with %d bytes, the manifest says %d%.0w", desc.Digest, size, desc.Size, errdefs.ErrDataLoss)
	}
	return f, nil
}

// verifiedFile is a stored blob read whole, checked against desc at EOF.
type verifiedFile struct {
	f    *os.File
	desc ocispec.Descriptor
	d    digest.Digester
	n    int64
}

func (v *verifiedFile) Read(p []byte) (int, error) {
	n, err := v.f.Read(p)
	v.d.Hash().Write(p[:n])
	v.n += int64(n)
	if err == io.EOF && (v.n != v.desc.Size || v.d.Digest() != v.desc.Digest) {
		return n, fmt.Errorf("stored blob %s: %d bytes of digest %s%.0w", v.desc.Digest, v.n, v.d.Digest(), errdefs.ErrDataLoss)
	}
	return n, err
}

func (v *verifiedFile) Close() error { return v.f.Close() }

// Blobs reads a local image's layers from the store's blob files, as the
// contents room reads an image's layers (graph/contents.Blobs).
type Blobs struct{ s *Store }

// Blobs is the store's blobs as the contents room reads them.
func (s *Store) Blobs() *Blobs { return &Blobs{s: s} }

func (b *Blobs) Open(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	return b.s.OpenBlobVerified(desc)
}

func (b *Blobs) ReadRange(ctx context.Context, desc ocispec.Descriptor, off, n int64) (io.ReadCloser, error) {
	return b.s.OpenBlobSection(desc, off, n)
}

// Local reports whether the store holds desc's blob.
func (b *Blobs) Local(desc ocispec.Descriptor) bool {
	return desc.Digest.Validate() == nil && b.s.HasBlob(desc.Digest)
}
