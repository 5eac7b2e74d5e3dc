package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"time"

	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/graph/store/migrate"
)

// The records files and the migration's steps (graph/store/migrate).
const (
	recordsFile    = migrate.RecordsFile
	recordsV1      = migrate.RecordsV1
	recordsVer     = migrate.V1
	stepTmpWritten = migrate.StepTmpWritten
	stepRenamed    = migrate.StepRenamed
	stepV1Kept     = migrate.StepV1Kept
	stepStub       = migrate.StepStub
	// stepSummariesChunk: a chunk of the summaries' fill committed, more
	// to come (summaries.go).
	stepSummariesChunk = "summaries-chunk"
)

func boltOptions() *bolt.Options {
	// The data-root's flock is held already: a second process never gets
	// here, so bbolt's own lock does not wait.
	return &bolt.Options{Timeout: time.Second}
}

// openDB opens meta.db, migrating or creating it first when needed
// (graph/store/migrate), and finishes an interrupted migration.
func (s *Store) openDB() error {
	dir := filepath.Join(s.root, wharfDir)
	dbPath := filepath.Join(dir, dbFile)
	err := migrate.Run(migrate.Config{Dir: dir, DBFile: dbFile, DBVersion: dbVersion,
		Create: s.createDB, WriteFile: s.writeFileAtomic, Step: s.stopAfter, Log: s.log})
	if err != nil {
		return err
	}
	db, err := bolt.Open(dbPath, fileMode, boltOptions())
	if err != nil {
		return fmt.Errorf("graph: open %s: %w", dbPath, err)
	}
	if err := db.View(func(tx *bolt.Tx) error { return checkSchema(tx, dbPath) }); err != nil {
		db.Close()
		return err
	}
	s.db = db
	// A meta.db written before the summaries bucket (or changed since by
	// a wharf without it) gets its summaries now, in one transaction.
	if err := s.fillSummaries(); err != nil {
		db.Close()
		s.db = nil
		return err
	}
	return nil
}

func (s *Store) step(name string) error {
	if s.stopAfter != nil {
		return s.stopAfter(name)
	}
	return nil
}

// readRecord reads the record at r from f.
func readRecord(f io.ReaderAt, r migrate.Record) (*ImageRecord, error) {
	b, err := r.Bytes(f)
	var rec ImageRecord
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil {
		return nil, fmt.Errorf("graph: read the record of %s: %w", r.ID, err)
	}
	rec.RepoTags = nonNil(rec.RepoTags)
	rec.RepoDigests = nonNil(rec.RepoDigests)
	return &rec, nil
}

// createDB writes a new records database at path holding the records
// recs places in src, and closes it (fsynced). It commits every
// s.chunk records (migrateChunk): the file is not meta.db until openDB renames it,
// so a crash between two commits leaves only a .tmp that the next start
// removes, and the memory bbolt holds for a transaction's dirty pages is
// a chunk's, not the whole store's.
func (s *Store) createDB(path string, src io.ReaderAt, recs []migrate.Record) error {
	db, err := bolt.Open(path, fileMode, boltOptions())
	if err != nil {
		return fmt.Errorf("graph: create %s: %w", path, err)
	}
	err = db.Update(initSchema)
	if err == nil {
		err = s.importRecords(db, src, recs)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("graph: write %s: %w", path, err)
	}
	return nil
}

// migrateChunk is how many records (or index keys) one transaction of the
// migration puts: 2,000 records are ~6 MB of pages, and a commit each
// adds ~25 fsyncs to a 50,000-image migration.
const migrateChunk = 2000

// importRecords writes the records recs places in src into a new
// database: the records, their references (a reference two records claim
// stays with the first in ID order, and leaves the other's lists), their
// targets and the blobs they keep alive, read from their documents now.
//
// Every bucket is written in key order. bbolt splits a transaction's nodes
// only at commit, so one transaction's puts into a bucket go into one
// growing node, and a put out of key order moves the node's tail: the
// blobs pairs of 50,000 images sharing three layers, put image by image,
// took ~38 s of memmove (BOLT.md). images, uses and summaries are keyed
// by image ID, and recs is sorted by it; refs, targets and blobs are
// gathered, sorted and then put. Appended in key order, every transaction
// adds to the right edge of each bucket, so the pages stay full across
// the chunks.
func (s *Store) importRecords(db *bolt.DB, src io.ReaderAt, recs []migrate.Record) error {
	claimed := map[string]bool{}
	keep := func(list []string) []string {
		out := []string{}
		for _, r := range list {
			if !claimed[r] {
				claimed[r] = true
				out = append(out, r)
			}
		}
		return out
	}
	var refs, targets, blobs, labels []kv
	var n uint64
	var last digest.Digest
	for len(recs) > 0 {
		chunk := recs[:min(s.chunk, len(recs))]
		recs = recs[len(chunk):]
		err := db.Update(func(btx *bolt.Tx) error {
			images, uses, sums := btx.Bucket(bucketImages), btx.Bucket(bucketUses), btx.Bucket(bucketSummaries)
			// Written in key order, the pages can be filled whole
			// (bbolt's own advice for appends); the default (half) left
			// 50,000 images' records and summaries two to a 4 KiB page:
			// a 357 MB meta.db.
			for _, b := range []*bolt.Bucket{images, uses, sums} {
				b.FillPercent = bulkFill
			}
			for _, at := range chunk {
				if n > 0 && at.ID == last {
					continue // a duplicate: the first wins
				}
				r, err := readRecord(src, at)
				if err != nil {
					return err
				}
				if r.ID != at.ID {
					return fmt.Errorf("graph: the record at byte %d changed while it was read", at.Off)
				}
				last = r.ID
				r.RepoTags, r.RepoDigests = keep(r.RepoTags), keep(r.RepoDigests)
				b, err := json.Marshal(r)
				if err != nil {
					return err
				}
				if err := images.Put([]byte(r.ID), b); err != nil {
					return err
				}
				for _, ref := range append(append([]string{}, r.RepoTags...), r.RepoDigests...) {
					refs = append(refs, kv{[]byte(ref), []byte(r.ID)})
				}
				for _, d := range targetsOf(r) {
					targets = append(targets, kv{k: pairKey(d, r.ID)})
				}
				list := dedupDigests(s.blobsOf(r))
				if err := putUsesList(uses, r.ID, list); err != nil {
					return err
				}
				for _, d := range list {
					blobs = append(blobs, kv{k: pairKey(d, r.ID)})
				}
				sm := s.summaryOf(r, nil, nil)
				if err := putSummary(sums, sm); err != nil {
					return err
				}
				for _, k := range labelKeys(sm) {
					labels = append(labels, kv{k: k})
				}
				n++
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, w := range []struct {
		bucket []byte
		kvs    []kv
	}{{bucketRefs, refs}, {bucketTargets, targets}, {bucketBlobs, blobs}, {bucketLabels, labels}} {
		if err := putSortedChunks(db, w.bucket, w.kvs, 10*s.chunk); err != nil {
			return err
		}
	}
	// The migration read every manifest once: the caches would otherwise
	// start out holding the whole store.
	s.metaMu.Lock()
	s.meta.Purge()
	s.refs.Purge()
	s.metaMu.Unlock()
	return db.Update(func(btx *bolt.Tx) error {
		m := btx.Bucket(bucketMeta)
		if err := putU64(m, keyCount, n); err != nil {
			return err
		}
		if err := putIndexGens(m, 1); err != nil {
			return err
		}
		return putU64(m, keyGen, 1)
	})
}

// bulkFill is the FillPercent of a bucket written in key order in one
// transaction (the migration, the summaries' fill).
const bulkFill = 1.0

// kv is one key and value to put.
type kv struct{ k, v []byte }

// putSorted puts kvs into b in key order (see importRecords).
func putSorted(b *bolt.Bucket, kvs []kv) error {
	sortKVs(kvs)
	return putAll(b, kvs)
}

func sortKVs(kvs []kv) {
	sort.Slice(kvs, func(i, j int) bool { return bytes.Compare(kvs[i].k, kvs[j].k) < 0 })
}

// putAll puts kvs into b in their order.
func putAll(b *bolt.Bucket, kvs []kv) error {
	for _, e := range kvs {
		if err := b.Put(e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

// putSortedChunks is putSorted into bucket of a database no one else uses
// yet (the migration's), n keys a transaction (10 × migrateChunk: an
// index key is ~20 times smaller than a record and its summary).
func putSortedChunks(db *bolt.DB, bucket []byte, kvs []kv, n int) error {
	sortKVs(kvs) // once: each chunk is then put as it is
	for len(kvs) > 0 {
		chunk := kvs[:min(n, len(kvs))]
		kvs = kvs[len(chunk):]
		err := db.Update(func(btx *bolt.Tx) error {
			b := btx.Bucket(bucket)
			b.FillPercent = bulkFill
			return putAll(b, chunk)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
