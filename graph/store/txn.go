package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/graph/store/record"
)

// Txn is one change to the records. It reads the database through the
// write transaction it runs in and keeps its own edits apart (an overlay),
// so a failing fn leaves nothing behind, even when it shares a
// group-committed transaction with other changes (commit.go). Update
// writes the overlay into the transaction only once fn succeeded.
type Txn struct {
	s    *Store
	v    dbView
	recs map[digest.Digest]*txRec // records read or written by the change
	refs map[string]digest.Digest // references set ("" = dropped)
	// candidates are the blobs of records deleted, or replaced by a record
	// with another target or manifest: collected after the commit when
	// the change asked to prune.
	candidates []digest.Digest
	count      int64 // images added minus images deleted
}

// txRec is one record as the change sees it.
type txRec struct {
	rec  *ImageRecord // nil: deleted by the change
	orig []byte       // as stored before the change; nil: new
	// old is orig decoded, for apply (its targets and references: its
	// slices are the change's own copies).
	old  *ImageRecord
	uses []digest.Digest
	// setUses: uses replaces the stored list.
	setUses bool
}

func newTxn(s *Store, tx *bolt.Tx) *Txn {
	return &Txn{s: s, v: dbView{tx}, recs: map[digest.Digest]*txRec{}, refs: map[string]digest.Digest{}}
}

// image is the record id as the change sees it (nil: none). The record is
// the change's own copy: edits to it are part of the change.
func (tx *Txn) image(id digest.Digest) (*ImageRecord, error) {
	if tr, ok := tx.recs[id]; ok {
		return tr.rec, nil
	}
	b := tx.v.raw(id)
	if b == nil {
		return nil, nil
	}
	r, err := decodeRecord(b)
	if err != nil {
		return nil, fmt.Errorf("graph: image record %s: %w", id, err)
	}
	old := *r
	old.RepoTags, old.RepoDigests = slices.Clone(r.RepoTags), slices.Clone(r.RepoDigests)
	tx.recs[id] = &txRec{rec: r, orig: bytes.Clone(b), old: &old}
	return r, nil
}

func (tx *Txn) refTarget(ref string) (digest.Digest, bool) {
	if id, ok := tx.refs[ref]; ok {
		return id, id != ""
	}
	return tx.v.refTarget(ref)
}

func (tx *Txn) byTarget(d digest.Digest) []digest.Digest {
	var out []digest.Digest
	seen := map[digest.Digest]bool{}
	for _, id := range tx.v.byTarget(d) {
		seen[id] = true
		if tr, ok := tx.recs[id]; ok && (tr.rec == nil || !slices.Contains(targetsOf(tr.rec), d)) {
			continue // deleted or retargeted by the change
		}
		out = append(out, id)
	}
	for id, tr := range tx.recs {
		if !seen[id] && tr.rec != nil && slices.Contains(targetsOf(tr.rec), d) {
			out = append(out, id)
		}
	}
	return out
}

func (tx *Txn) shortIDs(prefix string, max int, _ func(digest.Digest) bool) []digest.Digest {
	deleted := func(id digest.Digest) bool {
		tr, ok := tx.recs[id]
		return ok && tr.rec == nil
	}
	out := tx.v.shortIDs(prefix, max, deleted)
	for id, tr := range tx.recs {
		if tr.orig == nil && tr.rec != nil && strings.HasPrefix(string(id), prefix) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// Lookup resolves name in the transaction's view. The records a Txn returns
// are its own copies: edits to them (LastTagTime) are part of the change.
func (tx *Txn) Lookup(name string) (*ImageRecord, error) { return record.Lookup(lookupView{tx}, name) }

// Image is the record with the ID id, or nil.
func (tx *Txn) Image(id digest.Digest) *ImageRecord {
	r, err := tx.image(id)
	if err != nil {
		tx.s.log.WithError(err).Warn("read image record")
	}
	return r
}

// Images are the records, in ID order. It reads every record: prune's
// walk, not a per-request path.
func (tx *Txn) Images() []*ImageRecord {
	var out []*ImageRecord
	seen := map[digest.Digest]bool{}
	_ = tx.v.tx.Bucket(bucketImages).ForEach(func(k, b []byte) error {
		tx.s.scanned(tx.v.tx, len(k)+len(b))
		id := digest.Digest(k)
		seen[id] = true
		if r := tx.Image(id); r != nil {
			out = append(out, r)
		}
		return nil
	})
	for id, tr := range tx.recs {
		if !seen[id] && tr.rec != nil {
			out = append(out, tr.rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// RefTarget is the image the fully qualified reference ref names.
func (tx *Txn) RefTarget(ref string) (digest.Digest, bool) { return tx.refTarget(ref) }

// PointRef makes ref (fully qualified) name image id, taking it from any
// other image.
func (tx *Txn) PointRef(ref string, id digest.Digest) error {
	rec := tx.Image(id)
	if rec == nil {
		return NoSuchImage(id.String())
	}
	if other, ok := tx.refTarget(ref); ok && other != id {
		if o := tx.Image(other); o != nil {
			o.RepoTags = slices.DeleteFunc(o.RepoTags, func(s string) bool { return s == ref })
			o.RepoDigests = slices.DeleteFunc(o.RepoDigests, func(s string) bool { return s == ref })
		}
	}
	tx.refs[ref] = id
	if strings.Contains(ref, "@") {
		if !slices.Contains(rec.RepoDigests, ref) {
			rec.RepoDigests = append(rec.RepoDigests, ref)
			sort.Strings(rec.RepoDigests)
		}
		return nil
	}
	if !slices.Contains(rec.RepoTags, ref) {
		rec.RepoTags = append(rec.RepoTags, ref)
		sort.Strings(rec.RepoTags)
	}
	return nil
}

// DropRef removes ref from the image it names.
func (tx *Txn) DropRef(ref string) {
	id, ok := tx.refTarget(ref)
	if !ok {
		return
	}
	tx.refs[ref] = ""
	if r := tx.Image(id); r != nil {
		r.RepoTags = slices.DeleteFunc(r.RepoTags, func(s string) bool { return s == ref })
		r.RepoDigests = slices.DeleteFunc(r.RepoDigests, func(s string) bool { return s == ref })
	}
}

// Delete removes the image id and its references. Its blobs become
// candidates for collection once the change is committed.
func (tx *Txn) Delete(id digest.Digest) {
	rec := tx.Image(id)
	if rec == nil {
		return
	}
	for _, r := range append(append([]string{}, rec.RepoTags...), rec.RepoDigests...) {
		tx.DropRef(r)
	}
	tx.candidates = append(tx.candidates, tx.usesOf(id, rec)...)
	tr := tx.recs[id]
	tr.rec = nil
	tx.count--
}

// apply writes the change into its bbolt transaction. Called once fn
// succeeded; an error leaves the transaction to be rolled back.
func (tx *Txn) apply() error {
	btx := tx.v.tx
	images, targets, blobs, uses := btx.Bucket(bucketImages), btx.Bucket(bucketTargets), btx.Bucket(bucketBlobs), btx.Bucket(bucketUses)
	sums, labels := btx.Bucket(bucketSummaries), btx.Bucket(bucketLabels)
	ids := make([]digest.Digest, 0, len(tx.recs))
	for id := range tx.recs {
		ids = append(ids, id)
	}
	slices.Sort(ids) // sorted keys: fewer page splits
	for _, id := range ids {
		tr := tx.recs[id]
		old := tr.old
		if old == nil && tr.orig != nil {
			var err error
			if old, err = decodeRecord(tr.orig); err != nil {
				return err
			}
		}
		key := []byte(id)
		var nb []byte
		if tr.rec != nil {
			var err error
			if nb, err = json.Marshal(tr.rec); err != nil {
				return err
			}
		}
		switch {
		case tr.rec == nil && old == nil:
			continue // put and deleted by the same change
		case tr.rec == nil:
			if err := images.Delete(key); err != nil {
				return err
			}
			if err := indexLabels(labels, storedSummary(sums, id), nil); err != nil {
				return err
			}
			if err := sums.Delete(key); err != nil {
				return err
			}
		case old == nil || !bytes.Equal(nb, tr.orig):
			if err := images.Put(key, nb); err != nil {
				return err
			}
			// The summary goes with the record: its meta part is kept
			// when the manifest is the same (a tag reads no document).
			// The labels index goes with the summary (listindex.go).
			prev := storedSummary(sums, id)
			sm := tx.s.summaryOf(tr.rec, prev, old)
			if err := putSummary(sums, sm); err != nil {
				return err
			}
			if err := indexLabels(labels, prev, sm); err != nil {
				return err
			}
		}
		// targets: (target, id) and (manifest, id).
		var oldT, newT []digest.Digest
		if old != nil {
			oldT = targetsOf(old)
		}
		if tr.rec != nil {
			newT = targetsOf(tr.rec)
		}
		if !slices.Equal(oldT, newT) {
			for _, d := range oldT {
				if err := targets.Delete(pairKey(d, id)); err != nil {
					return err
				}
			}
			for _, d := range newT {
				if err := targets.Put(pairKey(d, id), nil); err != nil {
					return err
				}
			}
		}
		// uses and blobs: replaced when the change set them or deleted
		// the record.
		if tr.rec != nil && !tr.setUses {
			continue
		}
		if prev, ok := tx.v.uses(id); ok {
			for _, d := range prev {
				if err := blobs.Delete(pairKey(d, id)); err != nil {
					return err
				}
			}
		}
		if tr.rec == nil {
			if err := uses.Delete(key); err != nil {
				return err
			}
			continue
		}
		if err := putUses(uses, blobs, id, tr.uses); err != nil {
			return err
		}
	}
	refs := btx.Bucket(bucketRefs)
	for ref, id := range tx.refs {
		var err error
		if id == "" {
			err = refs.Delete([]byte(ref))
		} else {
			err = refs.Put([]byte(ref), []byte(id))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Update runs fn as one change to the records and commits it whole or not
// at all: fn's edits reach the database only if fn succeeds, and the
// change is durable (one fsync, shared with the concurrent changes
// committed with it) when Update returns. The blobs of images fn deleted
// are collected afterwards (prune: false keeps them, as noprune=1 asks).
// It returns the bytes freed.
func (s *Store) Update(prune bool, fn func(tx *Txn) error) (int64, error) {
	if prune {
		s.gcMu.RLock()
		defer s.gcMu.RUnlock()
	}
	tx, err := s.commit(fn)
	if err != nil {
		return 0, err
	}
	if !prune || len(tx.candidates) == 0 {
		return 0, nil
	}
	return s.collect(tx.candidates), nil
}
