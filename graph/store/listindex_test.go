package store

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"
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

// TestRefScans: the refs-bucket reads of familiar patterns.
func TestRefScans(t *testing.T) {
	show := func(scans []refScan) string {
		var s []string
		for _, sc := range scans {
			if sc.exact {
				s = append(s, "="+string(sc.key))
			} else {
				s = append(s, string(sc.key)+"…")
			}
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		patterns []string
		want     string // "" with ok false: the walk
		n        int    // or only the number of scans
	}{
		{[]string{"busybox"}, "=docker.io/library/busybox docker.io/library/busybox:… docker.io/library/busybox@… " +
			"=docker.io/busybox docker.io/busybox:… docker.io/busybox@… =busybox busybox:… busybox@…", 0},
		{[]string{"bu*"}, "docker.io/library/bu… docker.io/bu… bu…", 0},
		{[]string{`a\*b*`}, "docker.io/library/a*b… docker.io/a*b… a*b…", 0},
		{[]string{"a[bc]*"}, "docker.io/library/ab… docker.io/ab… ab… docker.io/library/ac… docker.io/ac… ac…", 0},
		{[]string{"a[^b-z]*"}, "", 3 * (93 - 25)},
		{[]string{"img-1?"}, "", 9 * 93},
		{[]string{"img-1??"}, "", 3 * 93}, // 93² is over maxExpand: open after the first ?
		{[]string{"x", "y*"}, "", 9 + 3},
		{[]string{"*box"}, "", -1},
		{[]string{"a", "*b"}, "", -1},
	} {
		got, ok := refScans(tc.patterns)
		switch {
		case tc.n < 0:
			if ok {
				t.Errorf("refScans(%q) = %s, want the walk", tc.patterns, show(got))
			}
		case !ok:
			t.Errorf("refScans(%q): the walk", tc.patterns)
		case tc.n > 0:
			if len(got) != tc.n {
				t.Errorf("refScans(%q): %d scans, want %d", tc.patterns, len(got), tc.n)
			}
		case show(got) != tc.want:
			t.Errorf("refScans(%q) =\n%s\nwant\n%s", tc.patterns, show(got), tc.want)
		}
	}
}

// FuzzRefPrefixes: whenever the list's reference filter matches a
// reference with a pattern (outside input: GET /images/json?filters=),
// the reference's fully qualified form is one refScans reads: the index
// never loses an image the walk keeps.
func FuzzRefPrefixes(f *testing.F) {
	for _, s := range [][2]string{
		{"busybox", "busybox:latest"}, {"bu*", "docker.io/library/busybox:1"}, {"foo/*", "foo/bar:x"},
		{"ghcr.io/o/*", "ghcr.io/o/r:1"}, {"localhost:5000/x*", "localhost:5000/x:y"}, {"img-1?", "img-12:latest"},
		{"img1@sha256:*", "img1@sha256:" + strings.Repeat("a", 64)}, {"library/a", "library/a/b:c"}, {"[a-c]?x:[^0]", "bqx:1"},
		{`a\:1`, "a:1"}, {"127.0.0.1:5000/many/img-1?", "127.0.0.1:5000/many/img-15:latest"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, ref string) {
		if _, err := path.Match(pattern, ""); err != nil {
			return
		}
		named, err := reference.ParseNormalizedNamed(ref)
		if err != nil {
			return
		}
		if ok, _ := reference.FamiliarMatch(pattern, named); !ok {
			return
		}
		scans, ok := refScans([]string{pattern})
		if !ok {
			return // the walk
		}
		q := named.String()
		for _, sc := range scans {
			if q == string(sc.key) || (!sc.exact && strings.HasPrefix(q, string(sc.key))) {
				return
			}
		}
		t.Fatalf("%q matches %q (%s), read by none of %d scans", pattern, ref, q, len(scans))
	})
}
