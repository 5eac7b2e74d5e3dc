package store

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/graph/store/listindex"
)

func listIDs(t *testing.T, s *Store, q ListQuery) []digest.Digest {
	t.Helper()
	var out []digest.Digest
	must(t, s.ListSummaries(q, func(sm *Summary) error { out = append(out, sm.ID); return nil }))
	return out
}

// TestListSummariesCandidates: the indexes hand over the images a filter
// can keep (a label longer than the index keeps makes its image a
// candidate of every label filter), intersected; a filter no index narrows
// walks every summary.
func TestListSummariesCandidates(t *testing.T) {
	s := newTestStore(t)
	long := strings.Repeat("x", maxLabelKey)
	a := putTestImage(t, s, testImage{tags: []string{"a:1"}, layers: []string{"a"}, labels: map[string]string{"k": "v", "team": "x"}})
	b := putTestImage(t, s, testImage{tags: []string{"ghcr.io/o/b:1"}, layers: []string{"b"}, labels: map[string]string{"k": "w"}})
	c := putTestImage(t, s, testImage{layers: []string{"c"}, labels: map[string]string{"desc": long}})
	dbConsistent(t, s)
	all := []digest.Digest{a.ID, b.ID, c.ID}
	slices.Sort(all)
	sorted := func(ids ...digest.Digest) []digest.Digest { slices.Sort(ids); return ids }
	for _, tc := range []struct {
		name string
		q    ListQuery
		want []digest.Digest
	}{
		{"no filter walks", ListQuery{}, all},
		{"label key", ListQuery{Labels: []string{"k"}}, sorted(a.ID, b.ID, c.ID)},
		{"label k=v", ListQuery{Labels: []string{"k=v"}}, sorted(a.ID, c.ID)},
		{"labels intersect", ListQuery{Labels: []string{"k", "team=x"}}, sorted(a.ID, c.ID)},
		{"label none", ListQuery{Labels: []string{"nothing"}}, []digest.Digest{c.ID}},
		{"untagged", ListQuery{Untagged: true}, []digest.Digest{c.ID}},
		{"reference familiar", ListQuery{References: []string{"a*"}}, []digest.Digest{a.ID}},
		{"reference with host", ListQuery{References: []string{"ghcr.io/*"}}, []digest.Digest{b.ID}},
		{"references or", ListQuery{References: []string{"a", "ghcr.io/o/b"}}, sorted(a.ID, b.ID)},
		{"reference glob first walks", ListQuery{References: []string{"*a"}}, all},
		{"reference and label", ListQuery{References: []string{"a"}, Labels: []string{"k=w"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := listIDs(t, s, tc.q); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("candidates %v, want %v", got, tc.want)
			}
		})
	}
	// Untagging a moves it to the untagged keys; deleting it drops its keys.
	_, err := s.Update(false, func(tx *Txn) error { tx.DropRef("docker.io/library/a:1"); return nil })
	must(t, err)
	dbConsistent(t, s)
	if got := listIDs(t, s, ListQuery{Untagged: true}); fmt.Sprint(got) != fmt.Sprint(sorted(a.ID, c.ID)) {
		t.Fatalf("untagged after untag: %v", got)
	}
	deleteImage(t, s, a.ID.String(), true)
	dbConsistent(t, s)
	if got := listIDs(t, s, ListQuery{Labels: []string{"team"}}); fmt.Sprint(got) != fmt.Sprint([]digest.Digest{c.ID}) {
		t.Fatalf("team after delete: %v", got)
	}
}

// TestLabelsFilledOnUpgrade: a meta.db with summaries but no labels index
// (written by the wharf before it) gets the index at open; so does one a
// wharf that keeps the summaries but not the labels changed (it moved gen
// and sumgen, not labelgen): the summaries' rule, with the labels' own gen
// key.
func TestLabelsFilledOnUpgrade(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root)
	a := putTestImage(t, s, testImage{tags: []string{"a:1"}, layers: []string{"a"}, labels: map[string]string{"k": "v"}})
	putTagged(t, s, "b:1", "b")
	must(t, s.db.Update(func(btx *bolt.Tx) error {
		if err := btx.DeleteBucket(bucketLabels); err != nil {
			return err
		}
		return btx.Bucket(bucketMeta).Delete(keyLabelGen)
	}))
	must(t, s.Close())
	s = openTestStore(t, root)
	dbConsistent(t, s)
	if got := listIDs(t, s, ListQuery{Labels: []string{"k=v"}}); fmt.Sprint(got) != fmt.Sprint([]digest.Digest{a.ID}) {
		t.Fatalf("after upgrade: %v", got)
	}

	// The previous wharf deletes a: the record, refs and summary go, the
	// labels keys stay, gen and sumgen move.
	must(t, s.db.Update(func(btx *bolt.Tx) error {
		v := dbView{btx}
		tx := newTxn(s, btx)
		tx.recs[a.ID] = &txRec{orig: v.raw(a.ID)}
		tx.refs["docker.io/library/a:1"] = ""
		lb := btx.Bucket(bucketLabels)
		var keep [][]byte
		must(t, lb.ForEach(func(k, _ []byte) error { keep = append(keep, bytes.Clone(k)); return nil }))
		if err := tx.apply(); err != nil {
			return err
		}
		for _, k := range keep { // as if apply had not known the labels
			if err := lb.Put(k, nil); err != nil {
				return err
			}
		}
		m := btx.Bucket(bucketMeta)
		gen := u64(m.Get(keyGen)) + 1
		if err := putU64(m, keySumGen, gen); err != nil {
			return err
		}
		if err := putU64(m, keyCount, u64(m.Get(keyCount))-1); err != nil {
			return err
		}
		return putU64(m, keyGen, gen)
	}))
	must(t, s.Close())
	s = openTestStore(t, root)
	dbConsistent(t, s) // the labels index holds exactly the summaries' keys
}

// TestRefSourceReadsWhatThePatternNames: on 1,000 references
// 127.0.0.1:5000/many/img-N (tag and digest each), "…/img-1?" finds its
// 10 images within 100 reads (the keys are walked, not every img-1…), a
// pattern with a class, an escape or a * finds what path.Match says.
func TestRefSourceReadsWhatThePatternNames(t *testing.T) {
	s := newTestStore(t)
	id := func(i int) digest.Digest { return digest.FromString(fmt.Sprint(i)) }
	must(t, s.db.Update(func(btx *bolt.Tx) error {
		b := btx.Bucket(bucketRefs)
		for i := 0; i < 1000; i++ {
			if err := b.Put([]byte(fmt.Sprintf("127.0.0.1:5000/many/img-%d:latest", i)), []byte(id(i))); err != nil {
				return err
			}
			if err := b.Put([]byte(fmt.Sprintf("127.0.0.1:5000/many/img-%d@%s", i, id(i))), []byte(id(i))); err != nil {
				return err
			}
		}
		return nil
	}))
	for _, tc := range []struct {
		pattern string
		want    []int
		reads   int // seeks and keys, at most
	}{
		{"127.0.0.1:5000/many/img-1?", []int{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, 100},
		{"127.0.0.1:5000/many/img-1[2-3]", []int{12, 13}, 30},
		{"127.0.0.1:5000/many/img-1[^0-8]?", []int{190, 191, 192, 193, 194, 195, 196, 197, 198, 199}, 100},
		{`127.0.0.1:5000/many/img-99\9`, []int{999}, 10},
		{"127.0.0.1:5000/many/img-99*", []int{99, 990, 991, 992, 993, 994, 995, 996, 997, 998, 999}, 40},
		{"127.0.0.1:5000/many/img-5:latest", []int{5}, 10},
		{"127.0.0.1:5000/many/img-7@sha256:*", []int{7}, 10},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			must(t, s.db.View(func(btx *bolt.Tx) error {
				got, ok := s.refSource(btx, []string{tc.pattern})(-1)
				if !ok {
					t.Fatal("incomplete without a limit")
				}
				for _, i := range tc.want {
					if _, ok := got[id(i)]; !ok {
						t.Errorf("img-%d not found", i)
					}
				}
				if len(got) != len(tc.want) {
					t.Errorf("%d candidates, want %d", len(got), len(tc.want))
				}
				if _, ok := s.refSource(btx, []string{tc.pattern})(tc.reads); !ok {
					t.Errorf("more than %d reads", tc.reads)
				}
				return nil
			}))
		})
	}
	if refIndexable([]string{"a", "*b"}) || !refIndexable([]string{"a", "?b"}) {
		t.Fatal("refIndexable")
	}
}

// FuzzRefSource: whenever the list's reference filter matches a reference
// with a pattern (outside input: GET /images/json?filters=), refSource
// finds the reference's image in a refs bucket holding it among others:
// the index never loses an image the walk keeps.
func FuzzRefSource(f *testing.F) {
	for _, s := range [][2]string{
		{"busybox", "busybox:latest"}, {"bu*", "docker.io/library/busybox:1"}, {"foo/*", "foo/bar:x"},
		{"ghcr.io/o/*", "ghcr.io/o/r:1"}, {"localhost:5000/x*", "localhost:5000/x:y"}, {"img-1?", "img-12:latest"},
		{"img1@sha256:*", "img1@sha256:" + strings.Repeat("a", 64)}, {"library/a", "library/a/b:c"}, {"[a-c]?x:[^0]", "bqx:1"},
		{`a\:1`, "a:1"}, {"127.0.0.1:5000/many/img-1?", "127.0.0.1:5000/many/img-15:latest"}, {"?usybox", "busybox:1"},
		{"b[^/]x/?", "b.x/y:1"},
	} {
		f.Add(s[0], s[1])
	}
	s := newTestStore(f)
	others := []string{"docker.io/library/busybox:1", "docker.io/library/busybox:latest", "ghcr.io/o/r:1", "docker.io/foo/bar:x",
		"localhost:5000/x:y", "docker.io/library/img-12:latest", "docker.io/library/bqx:1", "docker.io/b.x/y:1"}
	f.Fuzz(func(t *testing.T, pattern, ref string) {
		if _, err := path.Match(pattern, ""); err != nil {
			return
		}
		named, err := reference.ParseNormalizedNamed(ref)
		if err != nil {
			return
		}
		if ok, _ := reference.FamiliarMatch(pattern, named); !ok || !refIndexable([]string{pattern}) {
			return
		}
		want := digest.FromString(named.String())
		errRollback := errors.New("rollback")
		err = s.db.Update(func(btx *bolt.Tx) error {
			b := btx.Bucket(bucketRefs)
			for _, o := range others {
				if err := b.Put([]byte(o), []byte(digest.FromString(o))); err != nil {
					return err
				}
			}
			if err := b.Put([]byte(named.String()), []byte(want)); err != nil {
				return err
			}
			got, ok := s.refSource(btx, []string{pattern})(-1)
			if _, found := got[want]; !ok || !found {
				t.Fatalf("%q matches %q (%s): not found", pattern, ref, named.String())
			}
			return errRollback
		})
		if err != errRollback {
			t.Fatal(err)
		}
	})
}

// What the tests reach of graph/store/listindex by the store's names.
const maxLabelKey = listindex.MaxLabelKey

var refIndexable = listindex.RefIndexable

// refSource is listindex's RefSource over btx, as the list reads it.
func (s *Store) refSource(btx *bolt.Tx, patterns []string) listindex.Source {
	return s.listIndex(btx).RefSource(patterns)
}
