package store

// Image summaries: what GET /images/json shows and filters on, one small
// JSON value per image in the summaries bucket, written by the transaction
// that writes the record (Txn.apply), so listing the store is one cursor
// walk and reads no manifest or config.
//
//	summaries <image ID> → Summary as JSON
//	meta      sumgen     → uint64 BE: the gen the summaries are complete at
//
// sumgen is set to gen by every commit of this binary, by the migration
// and by the fill at open (labelgen with it: the labels index of
// listindex.go follows the same rule, indexFresh). A meta.db whose sumgen is not its gen (one
// written before the bucket existed, or changed since by a wharf that does
// not know it) gets its summaries rebuilt at open, in one transaction:
// a crash during the fill leaves the database as it was, and the next
// start fills it again. The schema version stays 2: a wharf without
// summaries reads this meta.db unchanged and ignores the bucket.

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/graph/store/record"
)

var (
	bucketSummaries = []byte("summaries")
	keySumGen       = []byte("sumgen")
)

// summaryOf builds the summary of rec. prev, when its meta part was read
// from the same manifest, is reused: a tag or untag reads no document.
// prev's references, with old (the record prev was written from), give
// the familiar form of every reference rec kept: a tag parses only its
// new reference (parsing them all was a third of a group commit's CPU).
func (s *Store) summaryOf(rec *ImageRecord, prev *Summary, old *ImageRecord) *Summary {
	sm := &Summary{
		ID:          rec.ID,
		Target:      rec.Target,
		Manifest:    rec.Manifest.Digest,
		RepoTags:    record.FamiliarFrom(rec.RepoTags, record.PrevRefs(old, prev, true)),
		RepoDigests: record.FamiliarFrom(rec.RepoDigests, record.PrevRefs(old, prev, false)),
	}
	sm.Target.Data = nil
	if prev != nil && prev.HasMeta && prev.Manifest == rec.Manifest.Digest && prev.ID == rec.ID {
		sm.HasMeta, sm.Created, sm.Labels, sm.Parent, sm.Size = true, prev.Created, prev.Labels, prev.Parent, prev.Size
		return sm
	}
	if m, err := s.Meta(rec); err == nil {
		sm.HasMeta = true
		sm.Created = m.Config.CreatedTime()
		sm.Labels = m.Config.Config.Labels
		sm.Parent = m.Config.Parent
		sm.Size = m.Size
	}
	return sm
}

func decodeSummary(b []byte) (*Summary, error) { return record.DecodeSummary(b) }

func putSummary(b *bolt.Bucket, sm *Summary) error {
	v, err := json.Marshal(sm)
	if err != nil {
		return err
	}
	return b.Put([]byte(sm.ID), v)
}

// storedSummary is the summary of id in b, nil when none (or unreadable).
func storedSummary(b *bolt.Bucket, id digest.Digest) *Summary {
	v := b.Get([]byte(id))
	if v == nil {
		return nil
	}
	sm, err := decodeSummary(v)
	if err != nil {
		return nil
	}
	return sm
}

// fillSummaries (re)writes the derived buckets at open when indexFresh
// says they are missing or stale (see the top of this file and
// listindex.go): the summary of every record when the summaries are, and
// the labels index (from the summaries) when either is.
//
// The summaries are written migrateChunk records a transaction: in one,
// bbolt held every dirty page of the bucket until the commit (peak heap
// 111 MiB at 50,000 images). Nothing else runs on the store yet (open),
// and the bucket's mark (keySumGen) is removed first and written only
// with the labels in the last transaction: a crash between two chunks
// leaves summaries marked stale, which the next start fills again.
func (s *Store) fillSummaries() error {
	var sumOK, labelOK bool
	err := s.db.View(func(btx *bolt.Tx) error {
		sumOK = indexFresh(btx, bucketSummaries, keySumGen)
		labelOK = indexFresh(btx, bucketLabels, keyLabelGen)
		return nil
	})
	if err != nil {
		return err
	}
	if sumOK && labelOK {
		return nil
	}
	var n int
	if !sumOK {
		n, err = s.fillSummariesChunked()
	}
	if err == nil {
		err = s.db.Update(func(btx *bolt.Tx) error {
			if err := fillLabels(s, btx); err != nil {
				return err
			}
			m := btx.Bucket(bucketMeta)
			return putIndexGens(m, u64(m.Get(keyGen)))
		})
	}
	if err != nil {
		return fmt.Errorf("graph: fill the image summaries of %s: %w", dbFile, err)
	}
	if sumOK {
		s.log.Info("image labels index written to wharf/meta.db")
		return nil
	}
	// The fill read every manifest once: start with empty caches.
	s.metaMu.Lock()
	s.meta.Purge()
	s.metaMu.Unlock()
	s.log.WithField("images", n).Info("image summaries written to wharf/meta.db")
	return nil
}

// fillSummariesChunked writes a new summaries bucket, migrateChunk records
// a transaction, in ID order (see fillSummaries), and returns how many.
func (s *Store) fillSummariesChunked() (int, error) {
	err := s.db.Update(func(btx *bolt.Tx) error {
		if err := btx.Bucket(bucketMeta).Delete(keySumGen); err != nil {
			return err
		}
		if btx.Bucket(bucketSummaries) != nil {
			if err := btx.DeleteBucket(bucketSummaries); err != nil {
				return err
			}
		}
		_, err := btx.CreateBucket(bucketSummaries)
		return err
	})
	if err != nil {
		return 0, err
	}
	n := 0
	var after []byte // the last record's key written
	for done := false; !done; {
		err := s.db.Update(func(btx *bolt.Tx) error {
			sb := btx.Bucket(bucketSummaries)
			sb.FillPercent = bulkFill // written in ID order
			c := btx.Bucket(bucketImages).Cursor()
			k, v := c.First()
			if after != nil {
				if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for i := 0; k != nil && i < s.chunk; k, v = c.Next() {
				r, err := decodeRecord(v)
				if err != nil {
					return fmt.Errorf("graph: image record %s: %w", k, err)
				}
				s.scanned(btx, 2048) // the record read, its summary written
				if err := putSummary(sb, s.summaryOf(r, nil, nil)); err != nil {
					return err
				}
				after = bytes.Clone(k)
				n++
				i++
			}
			done = k == nil
			return nil
		})
		if err != nil {
			return n, err
		}
		if !done {
			if err := s.step(stepSummariesChunk); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// errNoSummaries: a meta.db opened without its summaries bucket (the open
// fills it, so only a damaged file).
var errNoSummaries = fmt.Errorf("graph: %s: no summaries bucket", dbFile)

func errBadSummary(k []byte, err error) error {
	return fmt.Errorf("graph: image summary %s: %w", k, err)
}

// Summaries calls fn for the summary of every image, in ID order, from one
// read transaction (a cursor walk: no record, manifest or config is read).
func (s *Store) Summaries(fn func(*Summary) error) error {
	return s.db.View(func(btx *bolt.Tx) error { return s.walkSummaries(btx, fn) })
}

// SummariesOf calls fn with the summary of each of ids, in order, from one
// read transaction (nil for an image that has none: deleted since). The
// list's second pass reads its page of images this way.
func (s *Store) SummariesOf(ids []digest.Digest, fn func(digest.Digest, *Summary) error) error {
	return s.db.View(func(btx *bolt.Tx) error {
		b := btx.Bucket(bucketSummaries)
		if b == nil {
			return fmt.Errorf("graph: %s: no summaries bucket", dbFile)
		}
		for _, id := range ids {
			var sm *Summary
			s.scanned(btx, seekCost)
			if v := b.Get([]byte(id)); v != nil {
				var err error
				if sm, err = decodeSummary(v); err != nil {
					return fmt.Errorf("graph: image summary %s: %w", id, err)
				}
			}
			if err := fn(id, sm); err != nil {
				return err
			}
		}
		return nil
	})
}
