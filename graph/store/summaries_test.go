package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"
)

func summaryMap(t *testing.T, s *Store) map[string]*Summary {
	t.Helper()
	out := map[string]*Summary{}
	must(t, s.Summaries(func(sm *Summary) error { out[sm.ID.String()] = sm; return nil }))
	return out
}

// TestSummariesFollowTheRecords: a put writes the summary (with the
// config's created time, labels and size), a tag and an untag change its
// references, a delete removes it.
func TestSummariesFollowTheRecords(t *testing.T) {
	s := newTestStore(t)
	created := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	a := putTestImage(t, s, testImage{tags: []string{"a:1"}, layers: []string{"a"}, labels: map[string]string{"k": "v"}, created: created})
	b := putTagged(t, s, "", "b")
	dbConsistent(t, s)
	got := summaryMap(t, s)
	if len(got) != 2 {
		t.Fatalf("%d summaries, want 2", len(got))
	}
	sa := got[a.ID.String()]
	m, err := s.Meta(a)
	must(t, err)
	if !sa.HasMeta || !sa.Created.Equal(created) || sa.Labels["k"] != "v" || sa.Size != m.Size || sa.Size == 0 ||
		sa.Manifest != a.Manifest.Digest || sa.Target.Digest != a.Target.Digest || len(sa.RepoTags) != 1 || sa.RepoTags[0] != "a:1" {
		t.Fatalf("summary of a: %+v", sa)
	}
	if sb := got[b.ID.String()]; sb == nil || len(sb.RepoTags) != 0 || sb.RepoDigests == nil {
		t.Fatalf("summary of b: %+v", sb)
	}
	_, err = s.Update(false, func(tx *Txn) error {
		tx.DropRef("docker.io/library/a:1")
		return tx.PointRef("docker.io/library/b:2", b.ID)
	})
	must(t, err)
	dbConsistent(t, s)
	got = summaryMap(t, s)
	if len(got[a.ID.String()].RepoTags) != 0 || len(got[b.ID.String()].RepoTags) != 1 || !got[a.ID.String()].HasMeta {
		t.Fatalf("after untag/tag: a %+v b %+v", got[a.ID.String()], got[b.ID.String()])
	}
	deleteImage(t, s, b.ID.String(), true)
	dbConsistent(t, s)
	if got = summaryMap(t, s); len(got) != 1 || got[a.ID.String()] == nil {
		t.Fatalf("after delete: %v", got)
	}
}

// TestSummariesFilledOnUpgrade: a meta.db without the summaries bucket
// (written before it existed) gets it at open, complete; so does one
// changed by a wharf that does not keep the summaries (its gen moved past
// sumgen).
func TestSummariesFilledOnUpgrade(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root)
	a := putTestImage(t, s, testImage{tags: []string{"a:1"}, layers: []string{"a"}, labels: map[string]string{"k": "v"}})
	putTagged(t, s, "b:1", "b")
	must(t, s.db.Update(func(btx *bolt.Tx) error {
		if err := btx.DeleteBucket(bucketSummaries); err != nil {
			return err
		}
		return btx.Bucket(bucketMeta).Delete(keySumGen)
	}))
	must(t, s.Close())

	s = openTestStore(t, root)
	dbConsistent(t, s)
	if got := summaryMap(t, s); len(got) != 2 || !got[a.ID.String()].HasMeta || got[a.ID.String()].Labels["k"] != "v" {
		t.Fatalf("after upgrade: %v", got)
	}

	// An older wharf untags a:1 (the record and refs change, the summary
	// does not) and bumps gen.
	must(t, s.db.Update(func(btx *bolt.Tx) error {
		v := dbView{btx}
		r, err := v.image(a.ID)
		if err != nil {
			return err
		}
		r.RepoTags = []string{}
		tx := newTxn(s, btx)
		tx.recs[a.ID] = &txRec{rec: r, orig: v.raw(a.ID)}
		tx.refs["docker.io/library/a:1"] = ""
		sums := btx.Bucket(bucketSummaries)
		stale := storedSummary(sums, a.ID)
		if err := tx.apply(); err != nil {
			return err
		}
		if err := putSummary(sums, stale); err != nil { // as if apply had not known it
			return err
		}
		m := btx.Bucket(bucketMeta)
		return putU64(m, keyGen, u64(m.Get(keyGen))+1)
	}))
	must(t, s.Close())
	s = openTestStore(t, root)
	dbConsistent(t, s)
	if got := summaryMap(t, s); len(got[a.ID.String()].RepoTags) != 0 {
		t.Fatalf("stale summary kept: %+v", got[a.ID.String()])
	}
}

// TestSummaryKeysAreTheSummaries' fields: the unfiltered list's first pass
// reads only ID, Created and HasMeta (SummaryKeys); they must be what the
// whole summaries say, for images with and without a creation time.
func TestSummaryKeysAreTheSummaries(t *testing.T) {
	s := newTestStore(t)
	putTestImage(t, s, testImage{tags: []string{"a:1"}, layers: []string{"a"}, created: time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)})
	putTestImage(t, s, testImage{tags: []string{"c:1"}, layers: []string{"c"}})
	putTagged(t, s, "", "b")
	want := summaryMap(t, s)
	n := 0
	must(t, s.SummaryKeys(func(id digest.Digest, created time.Time, hasMeta bool) error {
		n++
		sm := want[id.String()]
		if sm == nil || !sm.Created.Equal(created) || sm.HasMeta != hasMeta {
			t.Errorf("key %s: created %v hasMeta %v, summary %+v", id, created, hasMeta, sm)
		}
		return nil
	}))
	if n != len(want) || n != 3 {
		t.Fatalf("%d keys for %d summaries", n, len(want))
	}
}

// The summaries' fill commits a chunk at a time (testChunk records here): a
// start stopped between two chunks leaves the summaries marked stale, and
// the next start fills them again, whole.
func TestSummariesFillResumesAfterAStopBetweenChunks(t *testing.T) {
	const n = testChunk + 3
	root := manyV1Root(t, n)
	s := openTestStore(t, root)
	must(t, s.db.Update(func(btx *bolt.Tx) error { return btx.Bucket(bucketMeta).Delete(keySumGen) }))
	must(t, s.Close())

	stopped := errors.New("stopped after a chunk")
	_, err := Open(context.Background(), Options{Root: root, Logger: quietLogger(), migrateChunk: testChunk, stopAfter: func(step string) error {
		if step == stepSummariesChunk {
			return stopped
		}
		return nil
	}})
	if !errors.Is(err, stopped) {
		t.Fatalf("open stopped after a chunk: %v", err)
	}
	db, err := bolt.Open(filepath.Join(root, wharfDir, dbFile), fileMode, boltOptions())
	must(t, err)
	var fresh bool
	var filled int
	must(t, db.View(func(btx *bolt.Tx) error {
		fresh = indexFresh(btx, bucketSummaries, keySumGen)
		filled = btx.Bucket(bucketSummaries).Stats().KeyN
		return nil
	}))
	must(t, db.Close())
	if fresh || filled != testChunk {
		t.Fatalf("after the stop: summaries fresh %v, %d of them; want stale and %d (one chunk)", fresh, filled, testChunk)
	}

	s = openTestStore(t, root)
	dbConsistent(t, s)
	if got := summaryMap(t, s); len(got) != n {
		t.Fatalf("%d summaries after the next start, want %d", len(got), n)
	}
}
