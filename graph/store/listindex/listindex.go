// Package listindex is the image list's index over the store's records
// database: the format of the labels bucket's keys, and the search of the
// refs and labels buckets for the candidates of a list's filters. It reads
// buckets it is handed, inside the caller's read transaction; the store
// writes them (with the summaries, in the same transaction) and decides
// when they are fresh.
//
// The indexes make GET /images/json linear in the images it returns, not
// in the store: listing with a selective filter reads the images an index
// names instead of walking every summary:
//
//	refs   <fully qualified ref>        → image ID (the store's): reference=
//	                                      (RefSource: the pattern walked
//	                                      over the keys)
//	labels <key>\x00<value>\x00<ID>     → "": label=KEY and label=KEY=VALUE
//	       \xfe\x00<ID>                 → "": an image without a tag
//	                                      (dangling=true)
//	       \xff\x00<ID>                 → "": an image the label keys cannot
//	                                      answer for (its summary has no meta
//	                                      part, or a label pair is longer than
//	                                      MaxLabelKey): a candidate of every
//	                                      label filter
//
// An index only narrows: the list checks every filter on each candidate's
// summary exactly as the walk does, so a stale extra key costs a read and
// never changes the answer; a missing key would, and the labels bucket is
// therefore written with the summary, in the same transaction (Txn.apply),
// and rebuilt at open by the rule the summaries follow (indexFresh: its gen
// key, labelgen, is the database's gen). Label keys are UTF-8 (they come
// from JSON), so \xfe and \xff never begin one.
package listindex

import (
	"bytes"
	"path"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"
)

// Marks of the labels bucket (see the package doc).
var (
	markUntagged  = []byte("\xfe\x00")
	markUnindexed = []byte("\xff\x00")
)

// MaxLabelKey caps a labels key: bbolt refuses keys over 32 KiB, and a
// long OCI description label would otherwise fill pages with one key.
// 1 KiB holds every label of the bench's and of common images; a longer
// pair makes its image a candidate of every label filter.
const MaxLabelKey = 1024

// LabelKeys are the labels-bucket keys of the image id: its untagged mark,
// a key per label pair, and its unindexed mark when its labels are unknown
// (no meta) or a pair is longer than MaxLabelKey.
func LabelKeys(id digest.Digest, tagged, hasMeta bool, labels map[string]string) [][]byte {
	var out [][]byte
	if !tagged {
		out = append(out, append(slices.Clip(markUntagged), id...))
	}
	unindexed := !hasMeta
	for k, v := range labels {
		if len(k)+len(v)+2+len(id) > MaxLabelKey {
			unindexed = true
			continue
		}
		key := make([]byte, 0, len(k)+len(v)+2+len(id))
		key = append(append(append(append(append(key, k...), 0), v...), 0), id...)
		out = append(out, key)
	}
	if unindexed {
		out = append(out, append(slices.Clip(markUnindexed), id...))
	}
	return out
}

// MoveKeys moves one image's keys in b from oldK to newK (either nil:
// written, or deleted). Keys in both are left.
func MoveKeys(b *bolt.Bucket, oldK, newK [][]byte) error {
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

// Query is what of the image list's filters an index can narrow.
// The caller still checks every filter on each summary it is handed.
type Query struct {
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

// Reader searches the indexes of one read transaction.
type Reader struct {
	Refs   *bolt.Bucket // fully qualified reference → image ID
	Labels *bolt.Bucket // the labels index; nil when the database has none
	Images int          // images in the store
	// Scanned counts n bytes read of the mapping; SeekCost is what one
	// cursor Seek or Get counts.
	Scanned  func(n int)
	SeekCost int
}

// source scans one index for the IDs of its candidates, stopping after
// limit keys (limit < 0: no limit); complete is false when it stopped.
type Source func(limit int) (ids map[digest.Digest]struct{}, complete bool)

// Candidates is the sorted candidate IDs of q; false when no index
// narrows it enough (see firstLimit).
func (r *Reader) Candidates(q Query) ([]digest.Digest, bool) {
	var srcs []Source
	if len(q.References) > 0 {
		if RefIndexable(q.References) {
			srcs = append(srcs, r.RefSource(q.References))
		}
	}
	if lb := r.Labels; lb != nil {
		lastID := func(k, _ []byte) digest.Digest { return digest.Digest(k[bytes.LastIndexByte(k, 0)+1:]) }
		for _, l := range q.Labels {
			k, v, hasV := strings.Cut(l, "=")
			p := append([]byte(k), 0)
			if hasV {
				p = append(append(p, v...), 0)
			}
			srcs = append(srcs, r.prefixSource(lb, [][]byte{p, markUnindexed}, lastID))
		}
		if q.Untagged {
			srcs = append(srcs, r.prefixSource(lb, [][]byte{markUntagged}, lastID))
		}
	}
	if len(srcs) == 0 {
		return nil, false
	}
	limits := []int{firstLimit}
	if quarter := r.Images / 4; quarter > firstLimit {
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
func (r *Reader) prefixSource(b *bolt.Bucket, prefixes [][]byte, id func(k, v []byte) digest.Digest) Source {
	return func(limit int) (map[digest.Digest]struct{}, bool) {
		out := map[digest.Digest]struct{}{}
		n := 0
		c := b.Cursor()
		for _, p := range prefixes {
			r.Scanned(r.SeekCost)
			for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
				if n++; limit >= 0 && n > limit {
					return nil, false
				}
				r.Scanned(len(k) + len(v))
				out[id(k, v)] = struct{}{}
			}
		}
		return out, true
	}
}

// maxExpand caps the fully qualified names a pattern's ? and [class]
// expand to; past it the names found so far are read as prefixes.
const maxExpand = 256

// RefIndexable reports whether RefSource can narrow patterns: none begins
// with * (a pattern "*x" can match any reference).
func RefIndexable(patterns []string) bool {
	for _, p := range patterns {
		if p == "" || p[0] == '*' {
			return false
		}
	}
	return true
}

// RefSource reads the refs bucket for every reference one of patterns
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
func (r *Reader) RefSource(patterns []string) Source {
	return func(limit int) (map[digest.Digest]struct{}, bool) {
		out := map[digest.Digest]struct{}{}
		c := r.Refs.Cursor()
		n := 0
		step := func() bool {
			r.Scanned(r.SeekCost)
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

// expandRef walks pat over the refs keys (see RefSource): the fully
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
