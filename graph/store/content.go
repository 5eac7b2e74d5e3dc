package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/internal/atomicfile"
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
// before a path is built from it: "sha256:../../x", a wrong length or an
// unknown algorithm never reach the file system.
func ValidateDigest(d digest.Digest) error {
	if err := d.Validate(); err != nil {
		return fmt.Errorf("invalid digest %q: %v%.0w", d, err, errdefs.ErrInvalidArgument)
	}
	switch d.Algorithm() {
	case digest.SHA256, digest.SHA512:
		return nil
	}
	return fmt.Errorf("invalid digest %q: unsupported algorithm%.0w", d, errdefs.ErrInvalidArgument)
}

// blobPath is where the blob d lives; d must have passed ValidateDigest.
func (s *Store) blobPath(d digest.Digest) string {
	return filepath.Join(s.root, BlobsDir, string(d.Algorithm()), d.Encoded())
}

// HasBlob reports whether the blob is stored. Whoever acts on a true answer
// (skips a download, records an image) must hold a lease on d first: see
// Lease.Has.
func (s *Store) HasBlob(d digest.Digest) bool {
	if ValidateDigest(d) != nil {
		return false
	}
	_, err := os.Stat(s.blobPath(d))
	return err == nil
}

// BlobSize is the stored size of d, or -1 when absent.
func (s *Store) BlobSize(d digest.Digest) int64 {
	if ValidateDigest(d) != nil {
		return -1
	}
	fi, err := os.Stat(s.blobPath(d))
	if err != nil {
		return -1
	}
	return fi.Size()
}

// OpenBlob opens a stored blob and returns its size.
func (s *Store) OpenBlob(d digest.Digest) (*os.File, int64, error) {
	if err := ValidateDigest(d); err != nil {
		return nil, 0, err
	}
	f, err := os.Open(s.blobPath(d))
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
	f, size, err := s.OpenBlob(d)
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

// writebackChunk is how many bytes an ingestion writes before it asks the
// kernel to start writing them to disk (startWriteback). 8 MiB: large
// enough that the call (one per chunk, ~µs) costs nothing beside the copy,
// small enough that a 32 MiB layer has most of its pages on their way to
// disk before its last byte arrives, and that the dirty pages of the
// parallel downloads of a pull stay a few tens of MiB.
const writebackChunk = 8 << 20

// Ingestion is one blob being written into ingest/ under a lease.
type Ingestion struct {
	lease    *Lease
	f        *os.File
	digester digest.Digester
	n        int64
	started  int64 // bytes [0, started) were handed to startWriteback
	done     bool
	// verified is the digest the source reader checks itself (see
	// WriteBlob's Verified option); digester is nil then.
	verified digest.Digest
	// partial: the file is a partial download (partial.go), kept on
	// Abort when keep is set; key is its name among s.ingests.
	partial, keep bool
	key           string
}

// Write hashes and writes p, and starts the writeback of every full chunk.
func (w *Ingestion) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if w.digester != nil {
		w.digester.Hash().Write(p[:n])
	}
	w.n += int64(n)
	if w.n-w.started >= writebackChunk {
		startWriteback(w.f, w.started, w.n-w.started)
		w.started = w.n
	}
	return n, err
}

// Digest is the digest of what was written so far (of a verified
// ingestion: the digest its source checks).
func (w *Ingestion) Digest() digest.Digest {
	if w.digester == nil {
		return w.verified
	}
	return w.digester.Digest()
}

// Size is the number of bytes written so far.
func (w *Ingestion) Size() int64 { return w.n }

// Commit checks size and digest (when given: size ≥ 0, digest non-empty),
// pins the blob in the lease, makes its data durable (fdatasync) and renames
// the temp file into blobs/. It returns the blob's digest and whether the
// blob is new to the store.
//
// The rename itself becomes durable with the fsync of blobs/ALG, which
// Commit leaves to the next records update (syncPendingDirs): one directory
// fsync per pull instead of one per blob, still before any record can name
// the blob (docs/reliability.md).
func (w *Ingestion) Commit(size int64, want digest.Digest) (digest.Digest, bool, error) {
	s := w.lease.s
	got := w.Digest()
	if size >= 0 && w.n != size {
		return "", false, fmt.Errorf("blob %s: size mismatch: got %d bytes, expected %d%.0w", want, w.n, size, errdefs.ErrInvalidArgument)
	}
	if want != "" && got != want {
		return "", false, fmt.Errorf("blob %s: digest mismatch: content is %s%.0w", want, got, errdefs.ErrInvalidArgument)
	}
	// Pinned before the rename: from the moment it is visible in blobs/,
	// no collection can take it from this lease's owner.
	w.lease.Add(got)
	existed := s.HasBlob(got)
	if err := syncData(w.f); err != nil {
		return "", false, err
	}
	if err := w.f.Close(); err != nil {
		return "", false, err
	}
	dst := s.blobPath(got)
	dir := filepath.Dir(dst)
	var created bool
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return "", false, err
		}
		created = true
	}
	// The rename and its mark are one step for syncPendingDirs: a records
	// update that sees the blob in blobs/ also sees its directory pending.
	s.pendMu.Lock()
	err := os.Rename(w.f.Name(), dst)
	if err == nil {
		s.pendDirs[dir] = true
		if created {
			s.pendDirs[filepath.Dir(dir)] = true
		}
	}
	s.pendMu.Unlock()
	if err != nil {
		return "", false, err
	}
	w.done = true
	if w.partial {
		s.endIngest(w.key)
	} else {
		s.endIngest(w.f.Name())
	}
	return got, !existed, nil
}

// syncPendingDirs fsyncs every directory a blob was renamed into since the
// last call. Every records commit calls it (commit.go) before it commits
// meta.db: a record is durable only after the blobs it names are.
func (s *Store) syncPendingDirs() error {
	s.pendMu.Lock()
	dirs := s.pendDirs
	s.pendDirs = map[string]bool{}
	s.pendMu.Unlock()
	for d := range dirs {
		if err := syncDir(d); err != nil {
			s.pendMu.Lock()
			for d := range dirs {
				s.pendDirs[d] = true // still owed
			}
			s.pendMu.Unlock()
			return fmt.Errorf("sync %s: %w", d, err)
		}
	}
	return nil
}

// Abort removes the temp file unless Commit succeeded.
func (w *Ingestion) Abort() {
	if w.done {
		return
	}
	w.done = true
	if w.partial {
		w.abortPartial()
		return
	}
	w.f.Close()
	os.Remove(w.f.Name())
	w.lease.s.endIngest(w.f.Name())
	w.done = true
}

func (s *Store) endIngest(name string) {
	if !strings.HasPrefix(name, "partial/") {
		name = filepath.Base(name)
	}
	s.leaseMu.Lock()
	delete(s.ingests, name)
	s.leaseMu.Unlock()
}

// RemoveBlob deletes a blob file; a missing one is not an error. Only
// garbage collection calls it (with leaseMu held).
func (s *Store) removeBlob(d digest.Digest) (int64, error) {
	if err := ValidateDigest(d); err != nil {
		return 0, err
	}
	p := s.blobPath(d)
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

// preparedFile is a metadata file written and fsynced under a temp name,
// waiting for its rename.
type preparedFile struct {
	tmp, dir, name string
	done           bool
}

// prepareFile writes data to a temp file in dir and fsyncs it: where a full
// disk or an I/O error shows, before anything visible changed.
func (s *Store) prepareFile(dir, name string, data []byte) (*preparedFile, error) {
	return s.prepareFileFunc(dir, name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// prepareFileFunc is prepareFile for content that write produces in
// pieces (index.json of 50,000 images: ~15 MB never held whole).
func (s *Store) prepareFileFunc(dir, name string, write func(io.Writer) error) (*preparedFile, error) {
	if s.failWrite != nil {
		if err := s.failWrite(name); err != nil {
			return nil, err
		}
	}
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return nil, err
	}
	p := &preparedFile{tmp: f.Name(), dir: dir, name: name}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(p.tmp, fileMode)
	}
	if err != nil {
		p.abort()
		return nil, err
	}
	return p, nil
}

func (p *preparedFile) commit() error {
	if err := os.Rename(p.tmp, filepath.Join(p.dir, p.name)); err != nil {
		p.abort()
		return err
	}
	p.done = true
	return syncDir(p.dir)
}

func (p *preparedFile) abort() {
	if !p.done {
		os.Remove(p.tmp)
		p.done = true
	}
}

// writeFileAtomic writes dir/name through a temp file in dir: write, fsync,
// rename, fsync dir.
func (s *Store) writeFileAtomic(dir, name string, data []byte) error {
	p, err := s.prepareFile(dir, name, data)
	if err != nil {
		return err
	}
	return p.commit()
}

// writeFileAtomicFunc is writeFileAtomic for content written by write.
func (s *Store) writeFileAtomicFunc(dir, name string, write func(io.Writer) error) error {
	p, err := s.prepareFileFunc(dir, name, write)
	if err != nil {
		return err
	}
	return p.commit()
}

// syncDir makes a rename in dir durable (atomicfile.SyncDir).
func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

// CopyCtx copies like io.Copy and stops between chunks when ctx is done
// (internal/ctxio).
func CopyCtx(ctx context.Context, dst io.Writer, src io.Reader) (int64, error) {
	return ctxio.Copy(ctx, dst, src)
}

// LimitReader returns a reader that fails (instead of truncating) past max bytes.
func LimitReader(r io.Reader, max int64) io.Reader { return &cappedReader{r: r, left: max, max: max} }

type cappedReader struct {
	r         io.Reader
	left, max int64
}

// ErrTooLarge is what a LimitReader returns past its cap.
var ErrTooLarge = errors.New("input too large")

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: more than %d bytes%.0w", ErrTooLarge, c.max, errdefs.ErrInvalidArgument)
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
