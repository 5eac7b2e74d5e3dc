package content

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/internal/ctxio"
)

// writebackChunk is how many bytes a Writer writes before it asks the
// kernel to start writing them to disk (startWriteback). 8 MiB: large
// enough that the call (one per chunk, ~µs) costs nothing beside the copy,
// small enough that a 32 MiB layer has most of its pages on their way to
// disk before its last byte arrives, and that the dirty pages of the
// parallel downloads of a pull stay a few tens of MiB.
const writebackChunk = 8 << 20

// Writer is one blob being written: a temp file in ingest/ or a partial
// download (partial.go).
type Writer struct {
	s        *Store
	f        *os.File
	digester digest.Digester
	n        int64
	started  int64 // bytes [0, started) were handed to startWriteback
	done     bool
	// verified is the digest the source reader checks itself; digester
	// is nil then.
	verified digest.Digest
	partial  bool
}

// NewWriter starts a blob of algorithm alg in a temp file of ingest/.
func (s *Store) NewWriter(alg digest.Algorithm) (*Writer, error) {
	f, err := os.CreateTemp(filepath.Join(s.root, IngestDir), "blob-*")
	if err != nil {
		return nil, err
	}
	return &Writer{s: s, f: f, digester: alg.Digester()}, nil
}

// Name is the temp file's name in ingest/ (the partial's path for a
// partial download).
func (w *Writer) Name() string {
	if w.partial {
		return w.f.Name()
	}
	return filepath.Base(w.f.Name())
}

// Partial reports whether w writes a partial download.
func (w *Writer) Partial() bool { return w.partial }

// Write hashes and writes p, and starts the writeback of every full chunk.
func (w *Writer) Write(p []byte) (int, error) {
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

// Verified says that the source checks it is the blob d itself: w stops
// hashing, and Digest is d.
func (w *Writer) Verified(d digest.Digest) { w.digester, w.verified = nil, d }

// Digest is the digest of what was written so far (of a verified write:
// the digest its source checks).
func (w *Writer) Digest() digest.Digest {
	if w.digester == nil {
		return w.verified
	}
	return w.digester.Digest()
}

// Size is the number of bytes written so far.
func (w *Writer) Size() int64 { return w.n }

// Kept reads the bytes written so far (a partial's kept bytes).
func (w *Writer) Kept() io.Reader { return io.NewSectionReader(w.f, 0, w.n) }

// Check checks size and digest (when given: size ≥ 0, digest non-empty)
// and returns the blob's digest.
func (w *Writer) Check(size int64, want digest.Digest) (digest.Digest, error) {
	got := w.Digest()
	if size >= 0 && w.n != size {
		return "", fmt.Errorf("blob %s: size mismatch: got %d bytes, expected %d%.0w", want, w.n, size, errdefs.ErrInvalidArgument)
	}
	if want != "" && got != want {
		return "", fmt.Errorf("blob %s: digest mismatch: content is %s%.0w", want, got, errdefs.ErrInvalidArgument)
	}
	return got, nil
}

// Commit makes the data durable (fdatasync) and renames the file into
// blobs/ as d, which Check returned. The rename itself becomes durable
// with the fsync of blobs/ALG, which Commit leaves to Pending.Sync.
func (w *Writer) Commit(d digest.Digest) error {
	if err := syncData(w.f); err != nil {
		return err
	}
	if err := w.f.Close(); err != nil {
		return err
	}
	dst := w.s.Path(d)
	dir := filepath.Dir(dst)
	var created bool
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, DirMode); err != nil {
			return err
		}
		created = true
	}
	// The rename and its mark are one step for Pending.Sync: a records
	// update that sees the blob in blobs/ also sees its directory pending.
	p := &w.s.Pending
	p.mu.Lock()
	err := os.Rename(w.f.Name(), dst)
	if err == nil {
		p.dirs[dir] = true
		if created {
			p.dirs[filepath.Dir(dir)] = true
		}
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	w.done = true
	return nil
}

// Abort closes w unless Commit or Abort ended it already, and removes its
// file, except a partial download holding a byte when keep is set. It
// reports whether it ended w.
func (w *Writer) Abort(keep bool) bool {
	if w.done {
		return false
	}
	w.done = true
	w.f.Close()
	if !w.partial || !keep || w.n == 0 {
		os.Remove(w.f.Name())
	}
	return true
}

// HashFile is the digest of the file at path, read under ctx.
func HashFile(ctx context.Context, path string, alg digest.Algorithm) (digest.Digest, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	dg := alg.Digester()
	if _, err := ctxio.Copy(ctx, dg.Hash(), f); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return dg.Digest(), nil
}
