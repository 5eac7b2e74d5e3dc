package store

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/graph/store/content"
)

// Partial downloads (content/partial.go has their rules): a failed
// download keeps its bytes for the next pull of the blob.
const (
	PartialTTL      = content.PartialTTL
	PartialMaxBytes = content.PartialMaxBytes
)

func (s *Store) partialPath(d digest.Digest) string { return s.blobs.PartialPath(d) }

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
	from = w.Size()
	w.w.Verified(desc.Digest)
	fail := func(err error) (bool, int64, error) {
		w.keep = w.w.Partial() && keep(err)
		return false, from, err
	}
	rc, err := open(w.w.Kept(), from)
	if err != nil {
		return fail(err)
	}
	defer rc.Close()
	if _, err := CopyCtx(ctx, w, io.LimitReader(rc, desc.Size-from+1)); err != nil {
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
	key := partialKey(desc.Digest)
	s.leaseMu.Lock()
	if s.ingests[key] {
		s.leaseMu.Unlock()
		return l.Ingest(desc.Digest.Algorithm())
	}
	s.ingests[key] = true
	s.leaseMu.Unlock()
	w, err := s.blobs.OpenPartial(desc.Digest, desc.Size, fresh)
	if err != nil {
		s.endIngest(key)
		return nil, fmt.Errorf("open partial download: %w", err)
	}
	return &Ingestion{lease: l, w: w, key: key}, nil
}

// partialKey is a partial's name among s.ingests: the ingest/ temp files
// are "blob-*", so the two never meet.
func partialKey(d digest.Digest) string { return "partial/" + d.String() }

// keepAsPartialLocked moves the stored blob d, which no record and no
// lease uses, into partial/ (content.KeepAsPartial) unless an ingestion
// writes d's partial. It reports whether d was moved (else the caller
// removes it). Called with leaseMu held.
func (s *Store) keepAsPartialLocked(d digest.Digest) bool {
	if s.ingests[partialKey(d)] || !s.blobs.KeepAsPartial(d) {
		return false
	}
	s.forget(d)
	return true
}

// PartialRestarts counts the downloads that resumed from a partial, proved
// wrong, and were downloaded again from zero (wharf_partial_restarts_total).
func (s *Store) PartialRestarts() int64 { return s.partialRestarts.Load() }

// collectPartialsLocked removes the partials no ingestion is writing
// that expired or are past s.partialMax (content.CollectPartials). It
// returns the bytes freed. Called with leaseMu held.
func (s *Store) collectPartialsLocked(now time.Time) int64 {
	busy := func(d digest.Digest) bool { return s.ingests[partialKey(d)] }
	warn := func(path string, err error) {
		s.log.WithError(err).WithField("path", path).Warn("remove partial download")
	}
	return s.blobs.CollectPartials(now, s.partialTTL, s.partialMax, busy, warn)
}

// PartialUsage counts the partial downloads kept and their bytes (`wharf
// system df`, `wharf system check`).
func (s *Store) PartialUsage() (partials int, bytes int64) { return s.blobs.PartialUsage() }
