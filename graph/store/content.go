package store

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/graph/store/content"
	"github.com/wharfproject/wharf/internal/ctxio"
)

// Provider reads stored content. The store implements it; pull, push and the
// archive code declare the part they need.
type Provider interface {
	HasBlob(d digest.Digest) bool
	OpenBlob(d digest.Digest) (*os.File, int64, error)
	ReadBlob(d digest.Digest, max int64) ([]byte, error)
}

// ValidateDigest refuses anything but a well-formed sha256 or sha512 digest
// before a path is built from it (content.ValidateDigest).
func ValidateDigest(d digest.Digest) error { return content.ValidateDigest(d) }

// blobPath is where the blob d lives; d must have passed ValidateDigest.
func (s *Store) blobPath(d digest.Digest) string { return s.blobs.Path(d) }

// HasBlob reports whether the blob is stored. Whoever acts on a true answer
// (skips a download, records an image) must hold a lease on d first: see
// Lease.Has.
func (s *Store) HasBlob(d digest.Digest) bool { return s.blobs.Has(d) }

// BlobSize is the stored size of d, or -1 when absent.
func (s *Store) BlobSize(d digest.Digest) int64 { return s.blobs.Size(d) }

// OpenBlob opens a stored blob and returns its size.
func (s *Store) OpenBlob(d digest.Digest) (*os.File, int64, error) { return s.blobs.Open(d) }

// ReadBlob reads a whole stored blob of at most max bytes.
func (s *Store) ReadBlob(d digest.Digest, max int64) ([]byte, error) { return s.blobs.Read(d, max) }

// Ingestion is one blob being written under a lease (content.Writer).
type Ingestion struct {
	lease *Lease
	w     *content.Writer
	// keep: a partial download (partial.go) stays on Abort; key is the
	// ingestion's name among s.ingests.
	keep bool
	key  string
}

// Write hashes and writes p.
func (w *Ingestion) Write(p []byte) (int, error) { return w.w.Write(p) }

// Digest is the digest of what was written so far (of a verified
// ingestion: the digest its source checks).
func (w *Ingestion) Digest() digest.Digest { return w.w.Digest() }

// Size is the number of bytes written so far.
func (w *Ingestion) Size() int64 { return w.w.Size() }

// Commit checks size and digest (when given: size ≥ 0, digest non-empty),
// pins the blob in the lease, makes its data durable (fdatasync) and renames
// the temp file into blobs/. It returns the blob's digest and whether the
// blob is new to the store.
//
// The rename itself becomes durable with the fsync of blobs/ALG, which
// Commit leaves to the next records update (content.Pending): one directory
// fsync per pull instead of one per blob, still before any record can name
// the blob (docs/reliability.md).
func (w *Ingestion) Commit(size int64, want digest.Digest) (digest.Digest, bool, error) {
	s := w.lease.s
	got, err := w.w.Check(size, want)
	if err != nil {
		return "", false, err
	}
	// Pinned before the rename: from the moment it is visible in blobs/,
	// no collection can take it from this lease's owner.
	w.lease.Add(got)
	existed := s.HasBlob(got)
	if err := w.w.Commit(got); err != nil {
		return "", false, err
	}
	s.endIngest(w.key)
	return got, !existed, nil
}

// Abort removes the temp file unless Commit succeeded.
func (w *Ingestion) Abort() {
	if !w.w.Abort(w.keep) {
		return
	}
	s := w.lease.s
	if !w.w.Partial() {
		s.endIngest(w.key)
		return
	}
	// A partial kept or dropped: the partials are trimmed to their cap.
	s.leaseMu.Lock()
	delete(s.ingests, w.key)
	s.collectPartialsLocked(time.Now())
	s.leaseMu.Unlock()
}

func (s *Store) endIngest(key string) {
	s.leaseMu.Lock()
	delete(s.ingests, key)
	s.leaseMu.Unlock()
}

// removeBlob deletes a blob file; a missing one is not an error. Only
// garbage collection calls it (with leaseMu held).
func (s *Store) removeBlob(d digest.Digest) (int64, error) { return s.blobs.Remove(d) }

// writeFileAtomic writes dir/name atomically (content.WriteFile).
func (s *Store) writeFileAtomic(dir, name string, data []byte) error {
	return s.writeFileAtomicFunc(dir, name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeFileAtomicFunc is writeFileAtomic for content written by write
// (index.json of 50,000 images: ~15 MB never held whole).
func (s *Store) writeFileAtomicFunc(dir, name string, write func(io.Writer) error) error {
	if s.failWrite != nil {
		if err := s.failWrite(name); err != nil {
			return err
		}
	}
	return content.WriteFile(dir, name, write)
}

// CopyCtx copies like io.Copy and stops between chunks when ctx is done
// (internal/ctxio).
func CopyCtx(ctx context.Context, dst io.Writer, src io.Reader) (int64, error) {
	return ctxio.Copy(ctx, dst, src)
}

// LimitReader returns a reader that fails (instead of truncating) past max
// bytes (content.LimitReader).
func LimitReader(r io.Reader, max int64) io.Reader { return content.LimitReader(r, max) }

// ErrTooLarge is what a LimitReader returns past its cap.
var ErrTooLarge = content.ErrTooLarge
