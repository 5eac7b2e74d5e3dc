package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"
)

// Partial downloads. A blob download that fails — the link, a
// cancellation, the daemon killed — keeps the bytes it wrote under
// partial/ALG/ENCODED, named by the digest it is downloading, so the next
// pull of that blob asks the registry only for the rest (Range). They are
// never trusted: the next download hashes them first and verifies the
// whole blob at its end (registry.FetchBlobFrom); a blob whose bytes prove
// wrong (a digest or size mismatch) loses its partial.
//
// The lease of a partial is its modification time: it expires
// PartialTTL after its last byte was written, and the next collection
// (start-up, the end of any operation's lease, `wharf image prune`)
// removes it. Past PartialMaxBytes in all, the least recently written
// partials go first. So a store keeps no orphan byte longer than a day.
const (
	// PartialTTL is containerd's ingest expiry: long enough to retry a
	// failed pull the next morning, short enough that an abandoned one
	// does not hold disk for long.
	PartialTTL = 24 * time.Hour
	// PartialMaxBytes bounds the disk all partials take: 8 GiB holds a
	// failed pull of the largest images in common use (CUDA and ML bases
	// of 5–8 GB compressed) while a full disk stays the user's choice, not
	// wharf's.
	PartialMaxBytes = 8 << 30
	partialDir      = "partial"
)

func (s *Store) partialPath(d digest.Digest) string {
	return filepath.Join(s.root, partialDir, string(d.Algorithm()), d.Encoded())
}

// ResumeFunc opens the rest of a blob of which have yields the first n
// bytes. Its reader must return an error in place of io.EOF unless have's
// bytes followed by its own are exactly the blob (registry.FetchBlobFrom's
// reader does).
type ResumeFunc func(have io.Reader, n int64) (io.ReadCloser, error)

// writeResumableBlob is a verified write through desc's partial download:
// open is given the bytes a failed download kept, and what it returns is
// appended to them. When the write fails and keep(err) is true (the bytes
// are not proven wrong), the partial stays for the next attempt. A partial
// another ingestion is writing is left alone: this one starts from zero in
// a temp file of its own.
//
// A write that resumed from kept bytes and fails with its bytes proven
// wrong (keep(err) false: a digest mismatch, a size that lies) cannot tell
// whether the kept bytes or the new ones were wrong. Partials are named by
// digest alone, so the kept bytes may be another registry's, a hostile
// one's; the partial is dropped and the blob downloaded once more from
// zero, within this call. Once only: a download from zero that proves
// wrong is the registry's answer, and fails.
func (l *Lease) writeResumableBlob(ctx context.Context, desc ocispec.Descriptor, open ResumeFunc, keep func(error) bool) (bool, error) {
	if need, err := l.needsBlob(desc); !need {
		return false, err
	}
	created, from, err := l.writeResumable(ctx, desc, open, keep, false)
	if err == nil || from == 0 || keep(err) || ctx.Err() != nil {
		return created, err
	}
	l.s.log.WithError(err).WithFields(logrus.Fields{"digest": desc.Digest, "kept": from}).
		Warn("partial download: the blob resumed from the bytes kept is wrong; dropped them, downloading it again from byte 0")
	l.s.partialRestarts.Add(1)
	created, _, err = l.writeResumable(ctx, desc, open, keep, true)
	return created, err
}

// writeResumable is one attempt of writeResumableBlob, from the partial's
// bytes (fresh: from none, the partial emptied first). from is the number
// of bytes it resumed from.
func (l *Lease) writeResumable(ctx context.Context, desc ocispec.Descriptor, open ResumeFunc, keep func(error) bool, fresh bool) (created bool, from int64, err error) {
	w, err := l.ingestPartial(desc, fresh)
	if err != nil {
		return false, 0, err
	}
	defer w.Abort()
	from = w.n
	w.digester, w.verified = nil, desc.Digest
	fail := func(err error) (bool, int64, error) {
		w.keep = w.partial && keep(err)
		return false, from, err
	}
	rc, err := open(io.NewSectionReader(w.f, 0, w.n), w.n)
	if err != nil {
		return fail(err)
	}
	defer rc.Close()
	if _, err := CopyCtx(ctx, w, io.LimitReader(rc, desc.Size-w.n+1)); err != nil {
		return fail(fmt.Errorf("write blob %s: %w", desc.Digest, err))
	}
	_, created, err = w.Commit(desc.Size, desc.Digest)
	if err == nil && created {
		l.s.leaseMu.Lock()
		if l.downloaded == nil {
			l.downloaded = map[digest.Digest]bool{}
		}
		l.downloaded[desc.Digest] = true
		l.s.leaseMu.Unlock()
	}
	return created, from, err
}

// ingestPartial opens desc's partial download for appending, creating it
// empty; one longer than the blob, or any when fresh, is emptied. A
// partial in use by another ingestion gives a plain temp-file ingestion
// instead.
func (l *Lease) ingestPartial(desc ocispec.Descriptor, fresh bool) (*Ingestion, error) {
	s := l.s
	p := s.partialPath(desc.Digest)
	key := partialKey(desc.Digest)
	s.leaseMu.Lock()
	if s.ingests[key] {
		s.leaseMu.Unlock()
		return l.Ingest(desc.Digest.Algorithm())
	}
	s.ingests[key] = true
	s.leaseMu.Unlock()
	w, err := openPartial(p, desc.Size, fresh)
	if err != nil {
		s.endIngest(key)
		return nil, fmt.Errorf("open partial download: %w", err)
	}
	w.lease, w.key = l, key
	return w, nil
}

func openPartial(p string, size int64, fresh bool) (*Ingestion, error) {
	if err := os.MkdirAll(filepath.Dir(p), dirMode); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, err
	}
	n, err := f.Seek(0, io.SeekEnd)
	if err == nil && (n > size || fresh) {
		if err = f.Truncate(0); err == nil {
			n, err = f.Seek(0, io.SeekStart)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Ingestion{f: f, n: n, started: n, partial: true}, nil
}

// partialKey is a partial's name among s.ingests: the ingest/ temp files
// are "blob-*", so the two never meet.
func partialKey(d digest.Digest) string { return "partial/" + d.String() }

// abortPartial closes a failed partial ingestion: kept when keep was set
// and it holds a byte, removed otherwise. Then the partials are trimmed to
// PartialMaxBytes.
func (w *Ingestion) abortPartial() {
	s := w.lease.s
	w.f.Close()
	if !w.keep || w.n == 0 {
		os.Remove(w.f.Name())
	}
	s.leaseMu.Lock()
	delete(s.ingests, w.key)
	s.collectPartialsLocked(time.Now())
	s.leaseMu.Unlock()
}

// keepAsPartialLocked moves the stored blob d, which no record and no
// lease uses, into partial/ as a complete partial download: the next pull
// of d hashes it and downloads nothing. Its lease starts now. It reports
// whether d was moved (else the caller removes it). Called with
// leaseMu held.
func (s *Store) keepAsPartialLocked(d digest.Digest) bool {
	if ValidateDigest(d) != nil || s.ingests[partialKey(d)] {
		return false
	}
	p := s.partialPath(d)
	if err := os.MkdirAll(filepath.Dir(p), dirMode); err != nil {
		return false
	}
	if err := os.Rename(s.blobPath(d), p); err != nil {
		return false
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now)
	s.forget(d)
	return true
}

// PartialRestarts counts the downloads that resumed from a partial, proved
// wrong, and were downloaded again from zero (wharf_partial_restarts_total).
func (s *Store) PartialRestarts() int64 { return s.partialRestarts.Load() }

// partialFile is one partial download on disk.
type partialFile struct {
	path    string
	d       digest.Digest // from its name; may not be valid
	size    int64
	written time.Time
}

func (s *Store) listPartials() []partialFile {
	var out []partialFile
	for _, alg := range []digest.Algorithm{digest.SHA256, digest.SHA512} {
		dir := filepath.Join(s.root, partialDir, string(alg))
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			d := digest.NewDigestFromEncoded(alg, e.Name())
			out = append(out, partialFile{path: filepath.Join(dir, e.Name()), d: d, size: fi.Size(), written: fi.ModTime()})
		}
	}
	return out
}

// collectPartialsLocked removes the partials no ingestion is writing that
// expired (PartialTTL after their last write, or named by no valid
// digest), then the least recently written until the rest fit in
// s.partialMax. It returns the bytes freed. Called with leaseMu held.
func (s *Store) collectPartialsLocked(now time.Time) int64 {
	ps := s.listPartials()
	sort.Slice(ps, func(i, j int) bool { return ps[i].written.After(ps[j].written) })
	var kept, freed int64
	for _, p := range ps {
		if s.ingests[partialKey(p.d)] {
			kept += p.size
			continue
		}
		if ValidateDigest(p.d) == nil && now.Sub(p.written) < s.partialTTL && kept+p.size <= s.partialMax {
			kept += p.size
			continue
		}
		if err := os.Remove(p.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.WithError(err).WithField("path", p.path).Warn("remove partial download")
			continue
		}
		freed += p.size
	}
	return freed
}

// PartialUsage counts the partial downloads kept and their bytes (`wharf
// system df`, `wharf system check`).
func (s *Store) PartialUsage() (partials int, bytes int64) {
	for _, p := range s.listPartials() {
		partials++
		bytes += p.size
	}
	return partials, bytes
}
