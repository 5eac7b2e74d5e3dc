package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/graph/store/content"
)

// Lease pins content for one operation (a pull, load, import, push or
// save), as containerd's leases do: garbage collection never deletes a blob
// that a live lease pins. An operation takes a lease first, pins every blob
// before it checks or writes it, records its image (Put), and releases the
// lease last; Release collects what it pinned that no record uses, so a
// failed operation leaves no orphans. Leases live in memory only: after a
// crash there is no operation left to protect, and start-up collects.
//
// A Lease is safe for use by several goroutines (the layers of one pull).
type Lease struct {
	s        *Store
	pinned   map[digest.Digest]bool
	released bool
	// downloaded: blobs this lease stored through a resumable write. If
	// no record uses them at Release (the pull failed after they were
	// complete), they become partial downloads instead of being deleted
	// (partial.go): a pull that fails at 99 % keeps 99 %.
	downloaded map[digest.Digest]bool
}

// NewLease starts a lease. The caller must Release it.
func (s *Store) NewLease() *Lease {
	return &Lease{s: s, pinned: map[digest.Digest]bool{}}
}

// Add pins ds for the lease's lifetime.
func (l *Lease) Add(ds ...digest.Digest) {
	s := l.s
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	l.addLocked(ds...)
}

func (l *Lease) addLocked(ds ...digest.Digest) {
	s := l.s
	if l.released {
		return
	}
	for _, d := range ds {
		if d == "" || l.pinned[d] {
			continue
		}
		l.pinned[d] = true
		s.pins[d]++
	}
}

// AddImage pins every blob rec uses (push and save read them while an rmi
// may remove the image). It checks that the image is still recorded in a
// read transaction begun under leaseMu, and pins under the same lock: a
// collection (which needs leaseMu) either ran before, and then the record
// was already gone (NotFound), or runs after and sees the pins. An image
// removed since the caller looked it up is NotFound.
func (l *Lease) AddImage(rec *ImageRecord) error {
	s := l.s
	extra := s.blobsOf(rec) // index children another record keeps (read outside the lock)
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	var uses []digest.Digest
	found := false
	err := s.db.View(func(btx *bolt.Tx) error {
		v := dbView{btx}
		if v.raw(rec.ID) == nil {
			return nil
		}
		found = true
		uses, _ = v.uses(rec.ID)
		return nil
	})
	if err != nil {
		return err
	}
	if !found {
		return NoSuchImage(rec.ID.String())
	}
	l.addLocked(append(uses, extra...)...)
	return nil
}

// Has pins d and then reports whether it is stored: a true answer stays
// true until Release.
func (l *Lease) Has(d digest.Digest) bool {
	l.Add(d)
	return l.s.HasBlob(d)
}

// Ingest starts writing a blob of algorithm alg whose digest is known only
// at the end (a layer computed from a stream).
func (l *Lease) Ingest(alg digest.Algorithm) (*Ingestion, error) {
	if alg == "" {
		alg = digest.SHA256
	}
	s := l.s
	// Created and registered under leaseMu: CollectAll removes the ingest
	// files it finds unregistered, under the same lock.
	s.leaseMu.Lock()
	w, err := s.blobs.NewWriter(alg)
	if err == nil {
		s.ingests[w.Name()] = true
	}
	s.leaseMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("create ingest file: %w", err)
	}
	return &Ingestion{lease: l, w: w, key: w.Name()}, nil
}

// WriteBlob stores r as the blob desc, verifying size and digest while
// streaming; the blob becomes visible only once verified (atomic rename). It
// pins desc first; writing a blob that exists is a no-op that drains nothing.
// Concurrent writers of one blob each write their own temp file; the renames
// replace identical content. It reports whether the blob was new.
//
// The options say how the bytes arrive: Verified (r checks desc's digest
// itself, so the store checks only the size) or Resumable (through desc's
// partial download; r is not read). Every write ends the same way: capped
// at desc.Size+1, fdatasynced, visible only once whole.
func (l *Lease) WriteBlob(ctx context.Context, desc ocispec.Descriptor, r io.Reader, opts ...WriteOpt) (bool, error) {
	o := ApplyWriteOpts(opts...)
	if o.Resume != nil {
		return l.writeResumableBlob(ctx, desc, o.Resume, o.Keep)
	}
	return l.writeBlob(ctx, desc, r, o.Verified)
}

// The options of WriteBlob (content/options.go).
type (
	WriteOpt     = content.WriteOpt
	WriteOptions = content.WriteOptions
	ResumeFunc   = content.ResumeFunc
)

// Verified is the option of a reader that verifies desc's digest itself.
func Verified() WriteOpt { return content.Verified() }

// Resumable is the option of a write through desc's partial download.
func Resumable(open ResumeFunc, keep func(error) bool) WriteOpt { return content.Resumable(open, keep) }

// ApplyWriteOpts is what opts ask, applied in order.
func ApplyWriteOpts(opts ...WriteOpt) WriteOptions { return content.ApplyWriteOpts(opts...) }

// needsBlob says whether desc is a well-formed descriptor of a blob the
// store does not have yet (a write of one it has is a no-op).
func (l *Lease) needsBlob(desc ocispec.Descriptor) (bool, error) {
	if err := ValidateDigest(desc.Digest); err != nil {
		return false, err
	}
	if desc.Size < 0 {
		return false, fmt.Errorf("blob %s: negative size %d%.0w", desc.Digest, desc.Size, errdefs.ErrInvalidArgument)
	}
	return !l.Has(desc.Digest), nil
}

func (l *Lease) writeBlob(ctx context.Context, desc ocispec.Descriptor, r io.Reader, verified bool) (bool, error) {
	if need, err := l.needsBlob(desc); !need {
		return false, err
	}
	w, err := l.Ingest(desc.Digest.Algorithm())
	if err != nil {
		return false, err
	}
	defer w.Abort()
	if verified {
		w.w.Verified(desc.Digest)
	}
	// Read at most one byte more than announced, so a longer body fails
	// without being stored whole.
	if _, err := CopyCtx(ctx, w, io.LimitReader(r, desc.Size+1)); err != nil {
		return false, fmt.Errorf("write blob %s: %w", desc.Digest, err)
	}
	_, created, err := w.Commit(desc.Size, desc.Digest)
	return created, err
}

// Release unpins the lease's blobs and collects those that no record and no
// other lease uses. It returns the bytes freed. Releasing twice is a no-op.
func (l *Lease) Release() int64 {
	s := l.s
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if l.released {
		return 0
	}
	l.released = true
	candidates := make([]digest.Digest, 0, len(l.pinned))
	for d := range l.pinned {
		if s.pins[d]--; s.pins[d] <= 0 {
			delete(s.pins, d)
		}
		candidates = append(candidates, d)
	}
	if len(l.downloaded) > 0 {
		var keep []digest.Digest
		_ = s.db.View(func(btx *bolt.Tx) error {
			v := dbView{btx}
			for d := range l.downloaded {
				if s.pins[d] <= 0 && !v.used(d) {
					keep = append(keep, d)
				}
			}
			return nil
		})
		for _, d := range keep {
			s.keepAsPartialLocked(d)
		}
	}
	return s.collectLocked(candidates) + s.collectPartialsLocked(time.Now())
}

// CollectAll removes every stored blob that no record and no lease uses,
// and every ingest temp file no live ingestion owns. It returns the number
// of blobs removed and the bytes freed.
func (s *Store) CollectAll(ctx context.Context) (int, int64, error) {
	got, freed, err := s.collectAll(ctx, false)
	return len(got), freed, err
}

// collectAll is CollectAll, returning the blobs it took out of blobs/;
// keep moves the orphans into partial/ instead (the scrub after a start:
// a pull killed after some of its layers were complete keeps them for
// the next pull, under the partial lease).
func (s *Store) collectAll(ctx context.Context, keep bool) ([]ocispec.Descriptor, int64, error) {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	orphans, err := s.orphansLocked(ctx)
	if err != nil {
		return nil, 0, err
	}
	var got []ocispec.Descriptor
	var freed int64
	for _, o := range orphans {
		if keep && s.keepAsPartialLocked(o.Digest) {
			got = append(got, o)
			continue
		}
		b, err := s.removeBlob(o.Digest)
		if err != nil {
			s.log.WithError(err).WithField("digest", o.Digest).Warn("remove unreferenced blob")
			continue
		}
		s.forget(o.Digest)
		got = append(got, o)
		freed += b
	}
	ents, _ := os.ReadDir(filepath.Join(s.root, ingestDir))
	for _, e := range ents {
		if !s.ingests[e.Name()] {
			os.Remove(filepath.Join(s.root, ingestDir, e.Name()))
		}
	}
	freed += s.collectPartialsLocked(time.Now())
	return got, freed, nil
}

// orphansLocked lists the stored blobs that no record and no lease uses.
// Called with leaseMu held.
func (s *Store) orphansLocked(ctx context.Context) ([]ocispec.Descriptor, error) {
	var out []ocispec.Descriptor
	err := s.db.View(func(btx *bolt.Tx) error {
		var err error
		out, err = s.orphansIn(ctx, dbView{btx})
		return err
	})
	return out, err
}

// orphansIn is orphansLocked in the read transaction of v.
func (s *Store) orphansIn(ctx context.Context, v dbView) ([]ocispec.Descriptor, error) {
	var out []ocispec.Descriptor
	for _, alg := range []digest.Algorithm{digest.SHA256, digest.SHA512} {
		dir := filepath.Join(s.root, BlobsDir, string(alg))
		ents, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			d := digest.NewDigestFromEncoded(alg, e.Name())
			s.scanned(v.tx, seekCost)
			if ValidateDigest(d) != nil || !e.Type().IsRegular() || s.pins[d] > 0 || v.used(d) {
				continue
			}
			var size int64
			if fi, err := e.Info(); err == nil {
				size = fi.Size()
			}
			out = append(out, ocispec.Descriptor{Digest: d, Size: size})
		}
	}
	return out, nil
}

// Orphans lists the blobs that no record and no operation in progress uses.
func (s *Store) Orphans(ctx context.Context) ([]ocispec.Descriptor, error) {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	return s.orphansLocked(ctx)
}

// forget drops what the caches derived from the removed blob d.
func (s *Store) forget(d digest.Digest) {
	s.metaMu.Lock()
	s.meta.Remove(d)
	s.refs.Remove(d)
	s.metaMu.Unlock()
}
