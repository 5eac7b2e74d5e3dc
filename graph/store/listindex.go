package store

// The image list's indexes (GET /images/json linear in the images it
// returns, not in the store). Listing with a selective filter reads the images an
// index names instead of walking every summary:
//
//	refs   <fully qualified ref>        → image ID (db.go): reference=
//	                                      (refSource: the pattern walked
//	                                      over the keys)
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
	"encoding/json"
	"path"
	"slices"
	"strings"
	"time"

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
		if refIndexable(q.References) {
			srcs = append(srcs, s.refSource(btx, q.References))
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

// maxExpand caps the fully qualified names a pattern's ? and [class]
// expand to; past it the names found so far are read as prefixes.
const maxExpand = 256

// refIndexable reports whether refSource can narrow patterns: none begins
// with * (a pattern "*x" can match any reference).
func refIndexable(patterns []string) bool {
	for _, p := range patterns {
		if p == "" || p[0] == '*' {
			return false
		}
	}
	return true
}

// refSource reads the refs bucket for every reference one of patterns
// (familiar form) can match.
//
// The list matches with reference.FamiliarMatch: path.Match against the
// familiar string F or the familiar name. The fully qualified Q of F is
// docker.io/library/F (F has no "/"), docker.io/F, or F itself (another
// host): Q is one of three roots followed by F. expandRef walks the
// pattern over the refs keys from those roots: a literal character (or
// \c) is appended to every name so far; a ? or [class] is replaced, for
// each name, by the characters that follow it in some key and that
// path.Match puts in the class (one Seek each: the keys are sorted); a *
// (or maxExpand names) stops the walk. Then:
//   - stopped (open): every match's Q begins with one of the names;
//   - the whole pattern walked (exact): F is the name's F, or the familiar
//     name is, so Q is the name itself or the name followed by : or @.
//
// "127.0.0.1:5000/many/img-1?" thus reads the ten names img-10…img-19 that
// exist (about 50 seeks), not every img-1… key. FuzzRefSource checks the
// rule against distribution/reference.
func (s *Store) refSource(btx *bolt.Tx, patterns []string) source {
	return func(limit int) (map[digest.Digest]struct{}, bool) {
		out := map[digest.Digest]struct{}{}
		c := btx.Bucket(bucketRefs).Cursor()
		n := 0
		step := func() bool {
			s.scanned(btx, seekCost)
			n++
			return limit < 0 || n <= limit
		}
		for _, pat := range patterns {
			names, open, ok := expandRef(c, pat, step)
			if !ok {
				return nil, false
			}
			for _, q := range names {
				reads := [][]byte{q, append(bytes.Clone(q), ':'), append(bytes.Clone(q), '@')}
				if open {
					reads = reads[:1]
				}
				for i, p := range reads {
					exact := !open && i == 0
					for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
						if exact && len(k) != len(p) {
							break
						}
						if !step() {
							return nil, false
						}
						out[digest.Digest(v)] = struct{}{}
						if exact {
							break
						}
					}
				}
			}
		}
		return out, true
	}
}

// expandRef walks pat over the refs keys (see refSource): the fully
// qualified names it reaches, whether it stopped before pat's end (open),
// and false when step refused (the limit).
func expandRef(c *bolt.Cursor, pat string, step func() bool) (names [][]byte, open, ok bool) {
	names = [][]byte{[]byte("docker.io/library/"), []byte("docker.io/"), {}}
	appendAll := func(b byte) {
		for i := range names {
			names[i] = append(names[i], b)
		}
	}
	for i := 0; i < len(pat); {
		switch ch := pat[i]; ch {
		case '*':
			return names, true, true
		case '\\':
			if i+1 >= len(pat) {
				return names, true, true
			}
			appendAll(pat[i+1])
			i += 2
		case '?', '[':
			w := 1
			if ch == '[' {
				if w = classEnd(pat[i:]); w < 0 {
					return names, true, true
				}
			}
			atom := pat[i : i+w]
			var next [][]byte
			for _, q := range names {
				k, _ := c.Seek(q)
				if k != nil && len(k) == len(q) {
					k, _ = c.Next() // q itself: no character follows
				}
				for k != nil && bytes.HasPrefix(k, q) {
					if !step() {
						return nil, false, false
					}
					b := k[len(q)]
					if m, _ := path.Match(atom, string([]byte{b})); m {
						next = append(next, append(bytes.Clone(q), b))
					}
					if b == 0xff {
						break
					}
					k, _ = c.Seek(append(bytes.Clone(q), b+1)) // past every key with q+b
				}
			}
			if len(next) > maxExpand {
				return names, true, true
			}
			names = next
			i += w
		default:
			appendAll(ch)
			i++
		}
	}
	return names, false, true
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
