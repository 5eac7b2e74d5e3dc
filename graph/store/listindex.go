package store

// The image list's indexes (issue 22: GET /images/json linear in the
// images it returns). Listing with a selective filter reads the images an
// index names instead of walking every summary:
//
//	refs   <fully qualified ref>        → image ID (db.go): reference=
//	                                      (refScans: the pattern's literal
//	                                      start, its ? and [class] expanded)
//	labels <key>\x00<value>\x00<ID>     → "": label=KEY and label=KEY=VALUE
//	       \xfe\x00<ID>                 → "": an image without a tag
//	                                      (dangling=true)
//	       \xff\x00<ID>                 → "": an image the label keys cannot
//	                                      answer for (its summary has no meta
//	                                      part, or a label pair is longer than
//	                                      maxLabelKey): a candidate of every
//	                                      label filter
//
// An index only narrows: the list checks every filter on each candidate's
// summary exactly as the walk does, so a stale extra key costs a read and
// never changes the answer; a missing key would, and the labels bucket is
// therefore written with the summary, in the same transaction (Txn.apply),
// and rebuilt at open by the rule the summaries follow (indexFresh: its gen
// key, labelgen, is the database's gen). Label keys are UTF-8 (they come
// from JSON), so \xfe and \xff never begin one.

import (
	"bytes"
	"path"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"
)

var (
	bucketLabels = []byte("labels")
	keyLabelGen  = []byte("labelgen")

	markUntagged  = []byte("\xfe\x00")
	markUnindexed = []byte("\xff\x00")
)

// maxLabelKey caps a labels key: bbolt refuses keys over 32 KiB, and a
// long OCI description label would otherwise fill pages with one key.
// 1 KiB holds every label of the bench's and of common images; a longer
// pair makes its image a candidate of every label filter.
const maxLabelKey = 1024

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
	var out [][]byte
	if len(sm.RepoTags) == 0 {
		out = append(out, append(slices.Clip(markUntagged), sm.ID...))
	}
	unindexed := !sm.HasMeta
	for k, v := range sm.Labels {
		if len(k)+len(v)+2+len(sm.ID) > maxLabelKey {
			unindexed = true
			continue
		}
		key := make([]byte, 0, len(k)+len(v)+2+len(sm.ID))
		key = append(append(append(append(append(key, k...), 0), v...), 0), sm.ID...)
		out = append(out, key)
	}
	if unindexed {
		out = append(out, append(slices.Clip(markUnindexed), sm.ID...))
	}
	return out
}

// indexLabels moves the label keys of one image from its old summary to
// its new one (either nil: written, or deleted). Keys in both are left.
func indexLabels(b *bolt.Bucket, old, cur *Summary) error {
	oldK, newK := labelKeys(old), labelKeys(cur)
	has := func(list [][]byte, k []byte) bool {
		return slices.ContainsFunc(list, func(x []byte) bool { return bytes.Equal(x, k) })
	}
	for _, k := range oldK {
		if !has(newK, k) {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
	}
	for _, k := range newK {
		if !has(oldK, k) {
			if err := b.Put(k, nil); err != nil {
				return err
			}
		}
	}
	return nil
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
// The caller still checks every filter on each summary it is handed.
type ListQuery struct {
	// References are the reference= glob patterns (familiar form, ORed).
	References []string
	// Labels are the label= filters, "KEY" or "KEY=VALUE" (ANDed).
	Labels []string
	// Untagged is dangling=true.
	Untagged bool
}

// Rounds of the candidate search: every usable index is scanned up to
// firstLimit keys; if none ends within that, up to a quarter of the
// images; past that an index narrows too little to beat the walk (a Get
// per candidate costs more than a cursor step), and the list walks.
const firstLimit = 1024

// ListSummaries calls fn for the summary of every image q might keep, in
// ID order, from one read transaction: the candidates of the most
// selective indexes (intersected), or every image when no index narrows
// q (Summaries).
func (s *Store) ListSummaries(q ListQuery, fn func(*Summary) error) error {
	return s.db.View(func(btx *bolt.Tx) error {
		ids, ok := s.listCandidates(btx, q)
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

// source scans one index for the IDs of its candidates, stopping after
// limit keys (limit < 0: no limit); complete is false when it stopped.
type source func(limit int) (ids map[digest.Digest]struct{}, complete bool)

// listCandidates is the sorted candidate IDs of q; false when no index
// narrows it enough (see firstLimit).
func (s *Store) listCandidates(btx *bolt.Tx, q ListQuery) ([]digest.Digest, bool) {
	var srcs []source
	if len(q.References) > 0 {
		if scans, ok := refScans(q.References); ok {
			srcs = append(srcs, s.refSource(btx, scans))
		}
	}
	lb := btx.Bucket(bucketLabels)
	if lb != nil {
		lastID := func(k, _ []byte) digest.Digest { return digest.Digest(k[bytes.LastIndexByte(k, 0)+1:]) }
		for _, l := range q.Labels {
			k, v, hasV := strings.Cut(l, "=")
			p := append([]byte(k), 0)
			if hasV {
				p = append(append(p, v...), 0)
			}
			srcs = append(srcs, s.prefixSource(btx, lb, [][]byte{p, markUnindexed}, lastID))
		}
		if q.Untagged {
			srcs = append(srcs, s.prefixSource(btx, lb, [][]byte{markUntagged}, lastID))
		}
	}
	if len(srcs) == 0 {
		return nil, false
	}
	limits := []int{firstLimit}
	if quarter := int(s.Count() / 4); quarter > firstLimit {
		limits = append(limits, quarter)
	}
	for _, limit := range limits {
		var sets []map[digest.Digest]struct{}
		for _, src := range srcs {
			if ids, complete := src(limit); complete {
				sets = append(sets, ids)
			}
		}
		if len(sets) == 0 {
			continue
		}
		// Intersect, from the smallest set.
		slices.SortFunc(sets, func(a, b map[digest.Digest]struct{}) int { return len(a) - len(b) })
		out := make([]digest.Digest, 0, len(sets[0]))
		for id := range sets[0] {
			in := true
			for _, o := range sets[1:] {
				if _, ok := o[id]; !ok {
					in = false
					break
				}
			}
			if in {
				out = append(out, id)
			}
		}
		slices.Sort(out)
		return out, true
	}
	return nil, false
}

// prefixSource scans b under each of prefixes; id names the image of a key.
func (s *Store) prefixSource(btx *bolt.Tx, b *bolt.Bucket, prefixes [][]byte, id func(k, v []byte) digest.Digest) source {
	return func(limit int) (map[digest.Digest]struct{}, bool) {
		out := map[digest.Digest]struct{}{}
		n := 0
		c := b.Cursor()
		for _, p := range prefixes {
			s.scanned(btx, seekCost)
			for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
				if n++; limit >= 0 && n > limit {
					return nil, false
				}
				s.scanned(btx, len(k)+len(v))
				out[id(k, v)] = struct{}{}
			}
		}
		return out, true
	}
}

// refScan is one read of the refs bucket: the keys under key (a prefix
// scan), or the one key itself when exact.
type refScan struct {
	key   []byte
	exact bool
}

// maxExpand caps the literal strings a pattern's ? and [class] expand to
// (each costs three seeks per variant, ~10 µs in all): "img-1?" is 93.
const maxExpand = 256

// refAlphabet is every character ? or a class can match in a reference:
// references are printable ASCII, and ? never matches "/".
var refAlphabet = func() []byte {
	var out []byte
	for c := byte('!'); c <= '~'; c++ {
		if c != '/' {
			out = append(out, c)
		}
	}
	return out
}()

// refScans are the reads of the refs bucket that find every fully
// qualified reference a familiar-form pattern can match; false when a
// pattern begins with * (no index narrows it).
//
// The list matches with reference.FamiliarMatch: path.Match against the
// familiar string F or the familiar name. The pattern is expanded, from
// its start, into literal strings L: a literal character (or \c) is
// appended, ? becomes each character of refAlphabet, a [class] each
// character path.Match puts in it, until a * or maxExpand. Then:
//   - open (a * or the cap stopped it): every match's F begins with one L;
//   - exact (the whole pattern expanded): F is one L, or the familiar name
//     is, so F is L followed by ":" or "@".
//
// The fully qualified Q of F is one of docker.io/library/F (F has no "/"),
// docker.io/F, or F itself (a host other than docker.io): each L is read
// under those three variants V — V as a prefix when open; V itself and the
// prefixes V: and V@ when exact. FuzzRefPrefixes checks this against
// distribution/reference.
func refScans(patterns []string) ([]refScan, bool) {
	var out []refScan
	for _, pat := range patterns {
		lits, open := expandPattern(pat)
		if open && len(lits) == 1 && lits[0] == "" {
			return nil, false
		}
		for _, l := range lits {
			for _, v := range []string{"docker.io/library/" + l, "docker.io/" + l, l} {
				if open {
					out = append(out, refScan{key: []byte(v)})
					continue
				}
				out = append(out, refScan{key: []byte(v), exact: true},
					refScan{key: []byte(v + ":")}, refScan{key: []byte(v + "@")})
			}
		}
	}
	return out, true
}

// expandPattern expands pat from its start (see refScans); open when it
// stopped before pat's end.
func expandPattern(pat string) (lits []string, open bool) {
	lits = []string{""}
	for i := 0; i < len(pat); {
		switch c := pat[i]; c {
		case '*':
			return lits, true
		case '\\':
			if i+1 >= len(pat) {
				return lits, true
			}
			lits = appendEach(lits, []byte{pat[i+1]})
			i += 2
		case '?', '[':
			set, n := refAlphabet, 1
			if c == '[' {
				n = classEnd(pat[i:])
				if n < 0 {
					return lits, true
				}
				set = nil
				for _, a := range refAlphabet {
					if ok, _ := path.Match(pat[i:i+n], string(a)); ok {
						set = append(set, a)
					}
				}
			}
			if len(lits)*len(set) > maxExpand {
				return lits, true
			}
			lits = appendEach(lits, set)
			i += n
		default:
			lits = appendEach(lits, []byte{c})
			i++
		}
	}
	return lits, false
}

// classEnd is the length of the [class] that begins s (path.Match's
// syntax: ^ negates, \c escapes, the first ] after a character closes);
// -1 when it does not close.
func classEnd(s string) int {
	i := 1
	if i < len(s) && s[i] == '^' {
		i++
	}
	first := true
	for i < len(s) {
		switch {
		case s[i] == '\\':
			i += 2
		case s[i] == ']' && !first:
			return i + 1
		default:
			i++
		}
		first = false
	}
	return -1
}

// appendEach is every string of lits followed by every byte of set.
func appendEach(lits []string, set []byte) []string {
	out := make([]string, 0, len(lits)*len(set))
	for _, l := range lits {
		for _, c := range set {
			out = append(out, l+string(c))
		}
	}
	return out
}

// refSource reads the refs bucket as scans say.
func (s *Store) refSource(btx *bolt.Tx, scans []refScan) source {
	return func(limit int) (map[digest.Digest]struct{}, bool) {
		out := map[digest.Digest]struct{}{}
		n := 0
		c := btx.Bucket(bucketRefs).Cursor()
		for _, sc := range scans {
			s.scanned(btx, seekCost)
			for k, v := c.Seek(sc.key); k != nil && bytes.HasPrefix(k, sc.key); k, v = c.Next() {
				if sc.exact && len(k) != len(sc.key) {
					break
				}
				if n++; limit >= 0 && n > limit {
					return nil, false
				}
				s.scanned(btx, len(k)+len(v))
				out[digest.Digest(v)] = struct{}{}
				if sc.exact {
					break
				}
			}
		}
		return out, true
	}
}

// walkSummaries calls fn for every summary, in ID order, inside btx.
func (s *Store) walkSummaries(btx *bolt.Tx, fn func(*Summary) error) error {
	b := btx.Bucket(bucketSummaries)
	if b == nil {
		return errNoSummaries
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		s.scanned(btx, len(k)+len(v))
		sm, err := decodeSummary(v)
		if err != nil {
			return errBadSummary(k, err)
		}
		if err := fn(sm); err != nil {
			return err
		}
	}
	return nil
}
