package store

// The image list's indexes: the labels bucket, written with the summaries
// (Txn.apply) and rebuilt at open by the rule the summaries follow
// (indexFresh); graph/store/listindex has its keys and the search.

import (
	"encoding/json"
	"time"

	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/graph/store/listindex"
)

var (
	bucketLabels = []byte("labels")
	keyLabelGen  = []byte("labelgen")
)

// indexFresh is the one rule of the derived buckets (summaries, labels):
// complete when the bucket exists and its gen key is the database's gen.
// Every commit of this binary sets both keys (putIndexGens); a wharf that
// does not know a bucket bumps gen without its key, and the next open
// rebuilds it.
func indexFresh(btx *bolt.Tx, bucket, genKey []byte) bool {
	m := btx.Bucket(bucketMeta)
	g := m.Get(genKey)
	return btx.Bucket(bucket) != nil && g != nil && u64(g) == u64(m.Get(keyGen))
}

// putIndexGens marks the derived buckets complete at gen: the commit's
// transaction kept them with the records (Txn.apply).
func putIndexGens(m *bolt.Bucket, gen uint64) error {
	if err := putU64(m, keySumGen, gen); err != nil {
		return err
	}
	return putU64(m, keyLabelGen, gen)
}

// labelKeys are the labels-bucket keys of the image sm summarises.
func labelKeys(sm *Summary) [][]byte {
	if sm == nil {
		return nil
	}
	return listindex.LabelKeys(sm.ID, len(sm.RepoTags) > 0, sm.HasMeta, sm.Labels)
}

// indexLabels moves the label keys of one image from its old summary to
// its new one (either nil: written, or deleted). Keys in both are left.
func indexLabels(b *bolt.Bucket, old, cur *Summary) error {
	return listindex.MoveKeys(b, labelKeys(old), labelKeys(cur))
}

// fillLabels rewrites the labels bucket from the summaries bucket, inside
// btx (the open's fill; the summaries are complete by then).
func fillLabels(s *Store, btx *bolt.Tx) error {
	if btx.Bucket(bucketLabels) != nil {
		if err := btx.DeleteBucket(bucketLabels); err != nil {
			return err
		}
	}
	lb, err := btx.CreateBucket(bucketLabels)
	if err != nil {
		return err
	}
	lb.FillPercent = bulkFill
	var kvs []kv
	err = btx.Bucket(bucketSummaries).ForEach(func(k, v []byte) error {
		s.scanned(btx, len(k)+len(v))
		sm, err := decodeSummary(v)
		if err != nil {
			return nil // unreadable: the list skips it as the walk does
		}
		for _, lk := range labelKeys(sm) {
			kvs = append(kvs, kv{k: lk})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return putSorted(lb, kvs)
}

// ListQuery is what of the image list's filters an index can narrow.
type ListQuery = listindex.Query

// ListSummaries calls fn for the summary of every image q might keep, in
// ID order, from one read transaction: the candidates of the most
// selective indexes (intersected), or every image when no index narrows
// q (Summaries).
func (s *Store) ListSummaries(q ListQuery, fn func(*Summary) error) error {
	return s.db.View(func(btx *bolt.Tx) error {
		ids, ok := s.listIndex(btx).Candidates(q)
		if !ok {
			return s.walkSummaries(btx, fn)
		}
		b := btx.Bucket(bucketSummaries)
		for _, id := range ids {
			s.scanned(btx, seekCost)
			v := b.Get([]byte(id))
			if v == nil {
				continue // a stale key: the image is gone
			}
			sm, err := decodeSummary(v)
			if err != nil {
				return errBadSummary([]byte(id), err)
			}
			if err := fn(sm); err != nil {
				return err
			}
		}
		return nil
	})
}

// listIndex reads the list's indexes in btx.
func (s *Store) listIndex(btx *bolt.Tx) *listindex.Reader {
	return &listindex.Reader{Refs: btx.Bucket(bucketRefs), Labels: btx.Bucket(bucketLabels), Images: s.Count(),
		Scanned: func(n int) { s.scanned(btx, n) }, SeekCost: seekCost}
}

// walkSummaries calls fn for every summary, in ID order, inside btx.
func (s *Store) walkSummaries(btx *bolt.Tx, fn func(*Summary) error) error {
	return s.forEachSummary(btx, func(k, v []byte) error {
		sm, err := decodeSummary(v)
		if err != nil {
			return errBadSummary(k, err)
		}
		return fn(sm)
	})
}

// forEachSummary calls fn with every summary's key and stored bytes, in
// ID order, inside btx, releasing the mapped pages read as it goes.
func (s *Store) forEachSummary(btx *bolt.Tx, fn func(k, v []byte) error) error {
	b := btx.Bucket(bucketSummaries)
	if b == nil {
		return errNoSummaries
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		s.scanned(btx, len(k)+len(v))
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

// summaryKey is what an unfiltered list's first pass needs of a summary:
// its sort key. Decoding only these two fields skips the references,
// labels and descriptor that the second pass decodes for the page it
// emits (at 50,000 images the first pass decoded every summary whole).
type summaryKey struct {
	HasMeta bool
	Created time.Time
}

// SummaryKeys calls fn with every image's ID, creation time and HasMeta,
// in ID order, from one read transaction, decoding nothing else of the
// summaries (an unfiltered GET /images/json sorts on these).
func (s *Store) SummaryKeys(fn func(id digest.Digest, created time.Time, hasMeta bool) error) error {
	return s.db.View(func(btx *bolt.Tx) error {
		return s.forEachSummary(btx, func(k, v []byte) error {
			var sk summaryKey
			if err := json.Unmarshal(v, &sk); err != nil {
				return errBadSummary(k, err)
			}
			return fn(digest.Digest(k), sk.Created, sk.HasMeta)
		})
	})
}
