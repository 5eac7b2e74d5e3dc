// Package content is the store's local content: the blob files of an OCI
// layout, named by digest under blobs/, the temp files they are written
// through under ingest/, and the partial downloads kept under partial/. A
// blob appears in blobs/ only once its size and digest are verified, by a
// rename. It knows nothing of images, records or leases: graph/store pins
// blobs, registers the ingestions in flight and decides what to delete.
package content

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/internal/atomicfile"
	"github.com/wharfproject/wharf/internal/ocilayout"
)

// Modes of everything under the data-root: the daemon's alone.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// IngestDir holds the temp files of blobs being written.
const IngestDir = "ingest"

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

// Store is the blob files under one data-root.
type Store struct {
	root string
	// Pending are the blob directories a rename went into whose fsync the
	// next records update owes.
	Pending Pending
}

// New is the content under root (root's directories are the caller's).
func New(root string) *Store {
	return &Store{root: root, Pending: Pending{dirs: map[string]bool{}}}
}

// Path is where the blob d lives; d must have passed ValidateDigest.
func (s *Store) Path(d digest.Digest) string {
	return filepath.Join(s.root, ocilayout.BlobsDir, string(d.Algorithm()), d.Encoded())
}

// Has reports whether the blob is stored.
func (s *Store) Has(d digest.Digest) bool {
	if ValidateDigest(d) != nil {
		return false
	}
	_, err := os.Stat(s.Path(d))
	return err == nil
}

// Size is the stored size of d, or -1 when absent.
func (s *Store) Size(d digest.Digest) int64 {
	if ValidateDigest(d) != nil {
		return -1
	}
	fi, err := os.Stat(s.Path(d))
	if err != nil {
		return -1
	}
	return fi.Size()
}

// Open opens a stored blob and returns its size.
func (s *Store) Open(d digest.Digest) (*os.File, int64, error) {
	if err := ValidateDigest(d); err != nil {
		return nil, 0, err
	}
	f, err := os.Open(s.Path(d))
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

// Read reads a whole stored blob of at most max bytes.
func (s *Store) Read(d digest.Digest, max int64) ([]byte, error) {
	f, size, err := s.Open(d)
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

// Remove deletes a blob file and returns its size; a missing one is not an
// error.
func (s *Store) Remove(d digest.Digest) (int64, error) {
	if err := ValidateDigest(d); err != nil {
		return 0, err
	}
	p := s.Path(d)
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

// Pending is the set of directories a blob was renamed into since the last
// Sync: one directory fsync per records update instead of one per blob,
// still before any record can name the blob.
type Pending struct {
	mu   sync.Mutex
	dirs map[string]bool
}

// Add marks dirs as owing an fsync.
func (p *Pending) Add(dirs ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range dirs {
		p.dirs[d] = true
	}
}

// Drop forgets dir.
func (p *Pending) Drop(dir string) {
	p.mu.Lock()
	delete(p.dirs, dir)
	p.mu.Unlock()
}

// Dirs is a copy of the directories owing an fsync.
func (p *Pending) Dirs() map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]bool, len(p.dirs))
	for d := range p.dirs {
		out[d] = true
	}
	return out
}

// Sync fsyncs every pending directory. A directory that fails stays owed,
// with every other of this call.
func (p *Pending) Sync() error {
	p.mu.Lock()
	dirs := p.dirs
	p.dirs = map[string]bool{}
	p.mu.Unlock()
	for d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			p.mu.Lock()
			for d := range dirs {
				p.dirs[d] = true // still owed
			}
			p.mu.Unlock()
			return fmt.Errorf("sync %s: %w", d, err)
		}
	}
	return nil
}
