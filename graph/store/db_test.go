package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// dbConsistent checks meta.db's derived buckets against its records: refs
// are exactly the records' RepoTags and RepoDigests (each naming one
// record), targets exactly their target and manifest digests, blobs
// exactly the reverse of uses, every record has a uses list, and
// meta.count is the number of records.
func dbConsistent(t *testing.T, s *Store) {
	t.Helper()
	must(t, s.db.View(func(btx *bolt.Tx) error {
		v := dbView{btx}
		wantRefs, wantTargets, wantBlobs := map[string]string{}, map[string]bool{}, map[string]bool{}
		n := 0
		err := v.forEachImage(func(r *ImageRecord) error {
			n++
			for _, ref := range append(append([]string{}, r.RepoTags...), r.RepoDigests...) {
				if other, ok := wantRefs[ref]; ok {
					return fmt.Errorf("ref %s held by %s and %s", ref, other, r.ID)
				}
				wantRefs[ref] = r.ID.String()
			}
			for _, d := range targetsOf(r) {
				wantTargets[string(pairKey(d, r.ID))] = true
			}
			u, ok := v.uses(r.ID)
			if !ok {
				return fmt.Errorf("record %s has no uses list", r.ID)
			}
			for _, d := range u {
				wantBlobs[string(pairKey(d, r.ID))] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
		if c := u64(btx.Bucket(bucketMeta).Get(keyCount)); c != uint64(n) || s.Count() != n {
			return fmt.Errorf("count %d (Count %d), records %d", c, s.Count(), n)
		}
		gotRefs := map[string]string{}
		_ = btx.Bucket(bucketRefs).ForEach(func(k, id []byte) error { gotRefs[string(k)] = string(id); return nil })
		if fmt.Sprint(gotRefs) != fmt.Sprint(wantRefs) {
			return fmt.Errorf("refs bucket %v, records say %v", gotRefs, wantRefs)
		}
		keys := func(b []byte) map[string]bool {
			out := map[string]bool{}
			_ = btx.Bucket(b).ForEach(func(k, _ []byte) error { out[string(k)] = true; return nil })
			return out
		}
		if got := keys(bucketTargets); fmt.Sprint(got) != fmt.Sprint(wantTargets) {
			return fmt.Errorf("targets bucket %v, records say %v", got, wantTargets)
		}
		if got := keys(bucketBlobs); fmt.Sprint(got) != fmt.Sprint(wantBlobs) {
			return fmt.Errorf("blobs bucket %v, uses say %v", got, wantBlobs)
		}
		if u := keys(bucketUses); len(u) != n {
			return fmt.Errorf("%d uses lists for %d records", len(u), n)
		}
		return summariesMatch(s, btx)
	}))
}

// summariesMatch: the summaries bucket holds exactly one summary per
// record, the one summaryOf builds from the record and its documents, and
// is marked complete at the current gen.
func summariesMatch(s *Store, btx *bolt.Tx) error {
	if !indexFresh(btx, bucketSummaries, keySumGen) {
		return fmt.Errorf("summaries not complete: sumgen %d, gen %d", u64(btx.Bucket(bucketMeta).Get(keySumGen)), dbView{btx}.gen())
	}
	if !indexFresh(btx, bucketLabels, keyLabelGen) {
		return fmt.Errorf("labels not complete: labelgen %d, gen %d", u64(btx.Bucket(bucketMeta).Get(keyLabelGen)), dbView{btx}.gen())
	}
	sums := btx.Bucket(bucketSummaries)
	wantLabels := map[string]bool{}
	n := 0
	err := dbView{btx}.forEachImage(func(r *ImageRecord) error {
		n++
		got := storedSummary(sums, r.ID)
		if got == nil {
			return fmt.Errorf("record %s has no summary", r.ID)
		}
		want := s.summaryOf(r, nil, nil)
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if !bytes.Equal(gb, wb) {
			return fmt.Errorf("summary of %s:\n got %s\nwant %s", r.ID, gb, wb)
		}
		for _, k := range labelKeys(want) {
			wantLabels[string(k)] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if k := sums.Stats().KeyN; k != n {
		return fmt.Errorf("%d summaries for %d records", k, n)
	}
	// The labels index holds exactly the keys of the summaries.
	err = btx.Bucket(bucketLabels).ForEach(func(k, _ []byte) error {
		if !wantLabels[string(k)] {
			return fmt.Errorf("labels key %q: no summary calls for it", k)
		}
		delete(wantLabels, string(k))
		return nil
	})
	if err != nil {
		return err
	}
	for k := range wantLabels {
		return fmt.Errorf("labels key %q missing", k)
	}
	return nil
}

// TestRandomChangesKeepTheBucketsConsistent: random changes (puts of new
// and existing images, retargets, tags moved and dropped, deletes, several
// per change, some failing after editing) keep meta.db's derived buckets
// exactly what the records call for, and the store clean.
func TestRandomChangesKeepTheBucketsConsistent(t *testing.T) {
	s := newTestStore(t)
	rng := rand.New(rand.NewSource(22))
	lease := s.NewLease()
	var recs []ImageRecord
	for i := 0; i < 6; i++ {
		recs = append(recs, writeTestImage(t, lease, testImage{layers: []string{fmt.Sprint("l", i), "shared"}}))
	}
	// An index over the first two: putting image 0 against it retargets it.
	top := writeTestIndex(t, lease, recs[0].Manifest, recs[1].Manifest)
	tags := []string{"a:1", "a:2", "b:1", "c:1", "example.com/x/y:z"}
	errFail := errors.New("fail")
	for round := 0; round < 60; round++ {
		if rng.Intn(4) == 0 {
			r := recs[rng.Intn(len(recs))]
			r.RepoTags = []string{tags[rng.Intn(len(tags))]}
			if rng.Intn(2) == 0 && r.ID == recs[0].ID {
				r.Target = top
			}
			must(t, s.Put(lease, r))
			dbConsistent(t, s)
			continue
		}
		fail := rng.Intn(5) == 0
		_, err := s.Update(true, func(tx *Txn) error {
			for k := 0; k < 1+rng.Intn(4); k++ {
				r := recs[rng.Intn(len(recs))]
				switch rng.Intn(4) {
				case 0:
					ref, _ := NormaliseRefs([]string{tags[rng.Intn(len(tags))]}, false)
					_ = tx.PointRef(ref[0], r.ID) // NotFound when not recorded
				case 1:
					ref, _ := NormaliseRefs([]string{tags[rng.Intn(len(tags))]}, false)
					tx.DropRef(ref[0])
				case 2:
					tx.Delete(r.ID)
				case 3:
					if rec := tx.Image(r.ID); rec != nil {
						rec.LastTagTime = rec.LastTagTime.Add(1)
					}
				}
			}
			if fail {
				return errFail
			}
			return nil
		})
		if fail != errors.Is(err, errFail) || (!fail && err != nil) {
			t.Fatalf("round %d: Update = %v (fail=%v)", round, err, fail)
		}
		dbConsistent(t, s)
	}
	lease.Release()
	dbConsistent(t, s)
	checkClean(t, s)
	// Every image listed resolves by its short ID and tags.
	for _, r := range s.Snapshot() {
		got, err := s.Lookup(r.ID.Encoded()[:12])
		if err != nil || got.ID != r.ID {
			t.Fatalf("short ID of %s: %v %v", r.ID, got, err)
		}
		for _, tag := range r.RepoTags {
			if got, err := s.Lookup(tag); err != nil || got.ID != r.ID {
				t.Fatalf("%s: %v %v", tag, got, err)
			}
		}
	}
}
