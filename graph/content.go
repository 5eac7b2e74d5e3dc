package graph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func specsVersioned() specs.Versioned { return specs.Versioned{SchemaVersion: 2} }

// validateDigest refuses anything but a well-formed sha256 or sha512 digest
// before a path is built from it: "sha256:../../x", a wrong length or an
// unknown algorithm never reach the file system.
func validateDigest(d digest.Digest) error {
	if err := d.Validate(); err != nil {
		return fmt.Errorf("invalid digest %q: %v%.0w", d, err, errdefs.ErrInvalidArgument)
	}
	switch d.Algorithm() {
	case digest.SHA256, digest.SHA512:
		return nil
	}
	return fmt.Errorf("invalid digest %q: unsupported algorithm%.0w", d, errdefs.ErrInvalidArgument)
}

// blobPath is where the blob d lives; d must have passed validateDigest.
func (l *localStore) blobPath(d digest.Digest) string {
	return filepath.Join(l.root, blobsDir, string(d.Algorithm()), d.Encoded())
}

func (l *localStore) hasBlob(d digest.Digest) bool {
	if validateDigest(d) != nil {
		return false
	}
	_, err := os.Stat(l.blobPath(d))
	return err == nil
}

// HasBlob reports whether the blob is in the store.
func (s *Store) HasBlob(d digest.Digest) bool { return s.local.hasBlob(d) }

// WriteBlob stores r as the blob desc, verifying size and digest while
// streaming; the blob becomes visible only once verified (atomic rename).
// Writing a blob that exists is a no-op that drains nothing. Concurrent
// writers of one blob each write their own temp file; the renames replace
// identical content.
func (s *Store) WriteBlob(ctx context.Context, desc ocispec.Descriptor, r io.Reader) error {
	_, err := s.local.writeBlob(ctx, desc, r)
	return err
}

// writeBlob is WriteBlob that also reports whether the blob was new.
func (l *localStore) writeBlob(ctx context.Context, desc ocispec.Descriptor, r io.Reader) (bool, error) {
	if err := validateDigest(desc.Digest); err != nil {
		return false, err
	}
	if desc.Size < 0 {
		return false, fmt.Errorf("blob %s: negative size %d%.0w", desc.Digest, desc.Size, errdefs.ErrInvalidArgument)
	}
	if l.hasBlob(desc.Digest) {
		return false, nil
	}
	w, err := l.newIngestion(desc.Digest.Algorithm())
	if err != nil {
		return false, err
	}
	defer w.abort()
	// Read at most one byte more than announced, so a longer body fails
	// without being stored whole.
	if _, err := copyCtx(ctx, w, io.LimitReader(r, desc.Size+1)); err != nil {
		return false, fmt.Errorf("write blob %s: %w", desc.Digest, err)
	}
	if _, err := w.commit(desc.Size, desc.Digest); err != nil {
		return false, err
	}
	return true, nil
}

// ingestion is one blob being written into ingest/.
type ingestion struct {
	l        *localStore
	f        *os.File
	digester digest.Digester
	n        int64
	done     bool
}

func (l *localStore) newIngestion(alg digest.Algorithm) (*ingestion, error) {
	if alg == "" {
		alg = digest.SHA256
	}
	f, err := os.CreateTemp(filepath.Join(l.root, ingestDir), "blob-*")
	if err != nil {
		return nil, fmt.Errorf("create ingest file: %w", err)
	}
	return &ingestion{l: l, f: f, digester: alg.Digester()}, nil
}

func (w *ingestion) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.digester.Hash().Write(p[:n])
	w.n += int64(n)
	return n, err
}

// commit checks size and digest (when given: size ≥ 0, digest non-empty)
// and renames the temp file into blobs/. It returns the blob's digest.
func (w *ingestion) commit(size int64, want digest.Digest) (digest.Digest, error) {
	got := w.digester.Digest()
	if size >= 0 && w.n != size {
		return "", fmt.Errorf("blob %s: size mismatch: got %d bytes, expected %d%.0w", want, w.n, size, errdefs.ErrInvalidArgument)
	}
	if want != "" && got != want {
		return "", fmt.Errorf("blob %s: digest mismatch: content is %s%.0w", want, got, errdefs.ErrInvalidArgument)
	}
	if err := w.f.Sync(); err != nil {
		return "", err
	}
	if err := w.f.Close(); err != nil {
		return "", err
	}
	dst := w.l.blobPath(got)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(w.f.Name(), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(w.f.Name(), dst); err != nil {
		return "", err
	}
	w.done = true
	return got, syncDir(filepath.Dir(dst))
}

// abort removes the temp file unless commit succeeded.
func (w *ingestion) abort() {
	if w.done {
		return
	}
	w.f.Close()
	os.Remove(w.f.Name())
	w.done = true
}

// OpenBlob opens a stored blob.
func (s *Store) OpenBlob(d digest.Digest) (io.ReadCloser, int64, error) {
	return s.local.openBlob(d)
}

func (l *localStore) openBlob(d digest.Digest) (*os.File, int64, error) {
	if err := validateDigest(d); err != nil {
		return nil, 0, err
	}
	f, err := os.Open(l.blobPath(d))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, fmt.Errorf("blob %s not found%.0w", d, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// ReadBlob reads a whole stored blob of at most max bytes.
func (s *Store) ReadBlob(d digest.Digest, max int64) ([]byte, error) {
	return s.local.readBlob(d, max)
}

func (l *localStore) readBlob(d digest.Digest, max int64) ([]byte, error) {
	f, size, err := l.openBlob(d)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > max {
		return nil, fmt.Errorf("blob %s too large: %d bytes > %d%.0w", d, size, max, errdefs.ErrInvalidArgument)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("read blob %s: %w", d, err)
	}
	return b, nil
}

// blobSize is the stored size of d, or -1 when absent.
func (l *localStore) blobSize(d digest.Digest) int64 {
	if validateDigest(d) != nil {
		return -1
	}
	fi, err := os.Stat(l.blobPath(d))
	if err != nil {
		return -1
	}
	return fi.Size()
}

// removeBlob deletes a blob file; a missing one is not an error. Callers
// hold mu for writing and have checked that no record references d.
func (l *localStore) removeBlob(d digest.Digest) (int64, error) {
	if err := validateDigest(d); err != nil {
		return 0, err
	}
	p := l.blobPath(d)
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	return fi.Size(), nil
}

// writeFileAtomic writes dir/name through a temp file in dir: write, fsync,
// rename, fsync dir.
func writeFileAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	ok = true
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// copyCtx copies like io.Copy and stops between chunks when ctx is done.
func copyCtx(ctx context.Context, dst io.Writer, src io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		m, rerr := src.Read(buf)
		if m > 0 {
			w, werr := dst.Write(buf[:m])
			n += int64(w)
			if werr != nil {
				return n, werr
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// limitReader returns a reader that fails (instead of truncating) past max bytes.
func limitReader(r io.Reader, max int64) io.Reader { return &cappedReader{r: r, left: max, max: max} }

type cappedReader struct {
	r         io.Reader
	left, max int64
}

var errTooLarge = errors.New("input too large")

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: more than %d bytes%.0w", errTooLarge, c.max, errdefs.ErrInvalidArgument)
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
