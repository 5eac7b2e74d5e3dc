package store

// The records database: wharf/meta.db, a bbolt file (go.etcd.io/bbolt, the
// B+tree with transactions containerd keeps its metadata in). A change is
// one write transaction, committed with one fsync; readers use read
// transactions, which see the last committed state and never wait for a
// writer. Layout (BOLT.md draws it too):
//
//	meta      version  → uint64 BE: the schema (dbVersion)
//	          gen      → uint64 BE: bumped by every committed change
//	          indexgen → uint64 BE: the gen index.json was last written at
//	          count    → uint64 BE: the number of images
//	images    <image ID>                 → ImageRecord as JSON
//	refs      <fully qualified ref>      → image ID (tags and digest refs)
//	targets   <target digest>\x00<ID>    → "" (target or manifest → images)
//	blobs     <blob digest>\x00<ID>      → "" (blob → the images keeping it)
//	uses      <image ID>                 → JSON list of the blobs it keeps
//	summaries <image ID>                 → Summary as JSON (summaries.go)
//	labels    <key>\x00<value>\x00<ID>   → "" (label and dangling index,
//	                                        listindex.go)
//
// images is keyed by "sha256:<hex>", so a short-ID lookup is a cursor Seek.
// blobs is what garbage collection asks ("does any record use d?"): one
// Seek per candidate, whatever the store's size. uses is the same relation
// the other way, written when a record is put: a delete knows its
// candidates without reading manifests.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"
)

const (
	dbFile = "meta.db"
	// dbVersion is the schema of meta.db. The records' format version is
	// the same number: images.json was version 1, meta.db is version 2,
	// and the stub left in images.json says 2 (migrate/).
	dbVersion = 2
)

var (
	bucketMeta    = []byte("meta")
	bucketImages  = []byte("images")
	bucketRefs    = []byte("refs")
	bucketTargets = []byte("targets")
	bucketBlobs   = []byte("blobs")
	bucketUses    = []byte("uses")

	keyVersion  = []byte("version")
	keyGen      = []byte("gen")
	keyIndexGen = []byte("indexgen")
	keyCount    = []byte("count")

	allBuckets = [][]byte{bucketMeta, bucketImages, bucketRefs, bucketTargets, bucketBlobs, bucketUses}
)

func u64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func putU64(b *bolt.Bucket, k []byte, v uint64) error {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], v)
	return b.Put(k, buf[:])
}

// initSchema creates the buckets of a new database and stamps its version.
func initSchema(tx *bolt.Tx) error {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	for _, name := range [][]byte{bucketSummaries, bucketLabels} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return putU64(tx.Bucket(bucketMeta), keyVersion, dbVersion)
}

// checkSchema refuses a database this binary does not know.
func checkSchema(tx *bolt.Tx, path string) error {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		return fmt.Errorf("graph: %s: not a wharf records database (no meta bucket)", path)
	}
	v := u64(m.Get(keyVersion))
	if v > dbVersion {
		return fmt.Errorf("graph: %s: records schema version %d is newer than this wharf knows (%d): "+
			"the data-root was written by a newer wharf, and downgrading is not supported", path, v, dbVersion)
	}
	if v != dbVersion {
		return fmt.Errorf("graph: %s: unsupported records schema version %d", path, v)
	}
	for _, name := range allBuckets {
		if tx.Bucket(name) == nil {
			return fmt.Errorf("graph: %s: bucket %s missing", path, name)
		}
	}
	return nil
}

// pairKey is a\x00b: the key of one (digest, image) pair in targets and
// blobs; pairPrefix is the prefix of every pair of a.
func pairKey(a digest.Digest, id digest.Digest) []byte {
	return append(pairPrefix(a), id...)
}

func pairPrefix(a digest.Digest) []byte {
	k := make([]byte, 0, len(a)+1+72)
	k = append(k, a...)
	return append(k, 0)
}

// pairIDs lists the image IDs paired with a in bucket b.
func pairIDs(b *bolt.Bucket, a digest.Digest) []digest.Digest {
	var out []digest.Digest
	p := pairPrefix(a)
	c := b.Cursor()
	for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
		out = append(out, digest.Digest(k[len(p):]))
	}
	return out
}

// hasPair reports whether a has any pair in b.
func hasPair(b *bolt.Bucket, a digest.Digest) bool {
	p := pairPrefix(a)
	k, _ := b.Cursor().Seek(p)
	return k != nil && bytes.HasPrefix(k, p)
}

// dbView reads the committed records through one bbolt transaction.
type dbView struct{ tx *bolt.Tx }

func (v dbView) raw(id digest.Digest) []byte {
	return v.tx.Bucket(bucketImages).Get([]byte(id))
}

func decodeRecord(b []byte) (*ImageRecord, error) {
	var r ImageRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	r.RepoTags = nonNil(r.RepoTags)
	r.RepoDigests = nonNil(r.RepoDigests)
	return &r, nil
}

func (v dbView) image(id digest.Digest) (*ImageRecord, error) {
	b := v.raw(id)
	if b == nil {
		return nil, nil
	}
	r, err := decodeRecord(b)
	if err != nil {
		return nil, fmt.Errorf("graph: image record %s: %w", id, err)
	}
	return r, nil
}

func (v dbView) refTarget(ref string) (digest.Digest, bool) {
	b := v.tx.Bucket(bucketRefs).Get([]byte(ref))
	if b == nil {
		return "", false
	}
	return digest.Digest(b), true
}

func (v dbView) byTarget(d digest.Digest) []digest.Digest {
	return pairIDs(v.tx.Bucket(bucketTargets), d)
}

// shortIDs lists up to max image IDs whose key starts with prefix (a full
// "sha256:<hex prefix>"), in order, skipping those skip says to.
func (v dbView) shortIDs(prefix string, max int, skip func(digest.Digest) bool) []digest.Digest {
	var out []digest.Digest
	p := []byte(prefix)
	c := v.tx.Bucket(bucketImages).Cursor()
	for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p) && len(out) < max; k, _ = c.Next() {
		id := digest.Digest(k)
		if skip != nil && skip(id) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// uses is the list of blobs the stored record id keeps alive; ok is false
// when none was written (the record does not exist).
func (v dbView) uses(id digest.Digest) ([]digest.Digest, bool) {
	b := v.tx.Bucket(bucketUses).Get([]byte(id))
	if b == nil {
		return nil, false
	}
	var out []digest.Digest
	if json.Unmarshal(b, &out) != nil {
		return nil, false
	}
	return out, true
}

// used reports whether any record keeps the blob d alive.
func (v dbView) used(d digest.Digest) bool {
	return hasPair(v.tx.Bucket(bucketBlobs), d)
}

func (v dbView) gen() uint64 { return u64(v.tx.Bucket(bucketMeta).Get(keyGen)) }

// forEachImage calls fn for every record, in ID order.
func (v dbView) forEachImage(fn func(r *ImageRecord) error) error {
	return v.tx.Bucket(bucketImages).ForEach(func(k, b []byte) error {
		r, err := decodeRecord(b)
		if err != nil {
			return fmt.Errorf("graph: image record %s: %w", k, err)
		}
		return fn(r)
	})
}
