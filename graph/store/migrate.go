package store

// The upgrade path: a data-root written by a wharf that kept its records in
// wharf/images.json (version 1) is migrated into wharf/meta.db at its first
// start, crash-safe. The steps, and what a start-up finds after a crash at
// each (BOLT.md has the table):
//
//  1. Write every record into meta.db.tmp, in one transaction, committed
//     (fsync), and close it.            crash: meta.db.tmp is removed, the
//                                       migration starts over from images.json
//  2. Rename meta.db.tmp → meta.db, fsync wharf/: the commit point.
//                                       crash: meta.db and the version-1
//                                       images.json: the migration committed;
//                                       steps 3–4 are finished
//  3. Rename images.json → images.json.v1, fsync wharf/.
//                                       crash: meta.db, images.json.v1, no
//                                       images.json: step 4 is finished
//  4. Write images.json as a version-2 stub (atomically).
//
// The stub is what keeps an older wharf off the migrated store: it refuses
// it ("unsupported version 2") instead of finding no images.json, taking
// the store for an empty one, and collecting every blob at start-up. A new
// store gets the stub too, for the same reason. images.json.v1 is kept as
// it was read; it is never read again (BOLT.md: why it stays).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"
)

// Migration steps, as stopAfter names them.
const (
	stepTmpWritten = "tmp-written"
	stepRenamed    = "renamed"
	stepV1Kept     = "v1-kept"
	stepStub       = "stub-written"
	// stepSummariesChunk: a chunk of the summaries' fill committed, more
	// to come (summaries.go).
	stepSummariesChunk = "summaries-chunk"
)

const stubNote = "wharf keeps its image records in meta.db (bbolt) since records version 2; " +
	"this file only stops an older wharf from taking the data-root for an empty one. " +
	"A wharf that reads only version 1 cannot use this data-root: downgrading is not supported."

func boltOptions() *bolt.Options {
	// The data-root's flock is held already: a second process never gets
	// here, so bbolt's own lock does not wait.
	return &bolt.Options{Timeout: time.Second}
}

// openDB opens meta.db, migrating or creating it first when needed, and
// finishes an interrupted migration.
func (s *Store) openDB() error {
	dir := filepath.Join(s.root, wharfDir)
	dbPath := filepath.Join(dir, dbFile)
	tmp := dbPath + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("graph: remove %s left by an interrupted migration: %w", tmp, err)
	}
	if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
		// The migration's garbage (each record decoded, marshalled and
		// dropped) is collected at 25 % growth instead of Go's 100 %: at
		// 50,000 images its peak heap is 121 MiB instead of 188, in the
		// same time (5.1 s against 5.4), for a step run once, before
		// the daemon serves anything. The setting in force is put back.
		defer debug.SetGCPercent(debug.SetGCPercent(migrateGCPercent))
		src, recs, err := s.readV1Records()
		if err != nil {
			return err
		}
		err = s.createDB(tmp, src, recs)
		if src != nil {
			src.Close()
		}
		if err != nil {
			os.Remove(tmp)
			return err
		}
		if err := s.step(stepTmpWritten); err != nil {
			return err
		}
		if err := os.Rename(tmp, dbPath); err != nil {
			return fmt.Errorf("graph: commit the records database: %w", err)
		}
		if err := syncDir(dir); err != nil {
			return err
		}
		if err := s.step(stepRenamed); err != nil {
			return err
		}
		if len(recs) > 0 {
			s.log.WithField("images", len(recs)).Info("image records migrated from wharf/images.json to wharf/meta.db")
		}
	} else if err != nil {
		return err
	}
	if err := s.finishStub(); err != nil {
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

// readRecordsVersion reads the version of wharf/<name>; ok is false when
// it does not exist. The records are skipped, not decoded: 50,000 of them
// decoded are ~200 MiB (finishStub only needs the version).
func (s *Store) readRecordsVersion(name string) (version int, ok bool, err error) {
	p := filepath.Join(s.root, wharfDir, name)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	var doc struct {
		Version int `json:"version"`
	}
	if err := json.NewDecoder(LimitReader(f, maxRecordsSize)).Decode(&doc); err != nil {
		return 0, false, fmt.Errorf("graph: read %s: %w", p, err)
	}
	return doc.Version, true, nil
}

// unsupportedVersion is the refusal of a records file this binary does not
// read: the same words as the refusal of version 2 by a wharf that knows
// only version 1, and what it means.
func unsupportedVersion(p string, v int) error {
	if v > dbVersion {
		return fmt.Errorf("graph: %s: unsupported version %d: the data-root was written by a newer wharf "+
			"(this one reads records versions %d and %d); downgrading is not supported", p, v, recordsVer, dbVersion)
	}
	return fmt.Errorf("graph: %s: unsupported version %d", p, v)
}

// v1Record is where one record of a version-1 images.json is in the file
// (bytes [off, end): the value, maybe after the comma that precedes it).
type v1Record struct {
	id       digest.Digest
	off, end int64
}

// readV1Records finds the records to migrate in images.json of version 1:
// each record's ID and place in the file, in ID order (a duplicated ID
// keeps its first place first), and the file open to read them from; none
// and a nil file for a new store. The records themselves are read one at
// a time as they are written (importRecords): decoded all at once, 50,000
// of them took the migration to a 538 MiB peak (bench case 11).
func (s *Store) readV1Records() (*os.File, []v1Record, error) {
	p := filepath.Join(s.root, wharfDir, recordsFile)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	version, recs, err := scanRecords(LimitReader(f, maxRecordsSize))
	if err == nil {
		switch version {
		case recordsVer:
		case dbVersion:
			err = fmt.Errorf("graph: %s is the stub of a migrated store, but %s is missing: "+
				"the image records are lost (restore %s, or %s to go back to the records as they were before the migration)",
				p, dbFile, dbFile, recordsV1)
		default:
			err = unsupportedVersion(p, version)
		}
	} else {
		err = fmt.Errorf("graph: read %s: %w", p, err)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].id < recs[j].id })
	return f, recs, nil
}

// scanRecords reads a records document ({"version":N,"images":[…]}, other
// keys skipped) and returns its version and where each record with a
// valid ID is; a null or ID-less record is left out, as before.
func scanRecords(r io.Reader) (version int, recs []v1Record, err error) {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, nil, fmt.Errorf("not a records document (%v)", err)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0, nil, err
		}
		// Keys match as encoding/json matches them to recordsDoc's
		// fields: case folded.
		switch key, _ := t.(string); {
		case strings.EqualFold(key, "version"):
			if err := dec.Decode(&version); err != nil {
				return 0, nil, err
			}
		case strings.EqualFold(key, "images"):
			t, err := dec.Token()
			if err != nil {
				return 0, nil, err
			}
			if t == nil {
				recs = recs[:0] // null: no images
				continue
			}
			if t != json.Delim('[') {
				return 0, nil, fmt.Errorf("images is not a list")
			}
			recs = recs[:0] // a second "images" replaces the first, as for encoding/json
			for dec.More() {
				off := dec.InputOffset()
				var rec struct{ ID digest.Digest }
				if err := dec.Decode(&rec); err != nil {
					return 0, nil, err
				}
				if rec.ID.Validate() == nil {
					recs = append(recs, v1Record{id: rec.ID, off: off, end: dec.InputOffset()})
				}
			}
			if _, err := dec.Token(); err != nil { // ]
				return 0, nil, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return 0, nil, err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // }
		return 0, nil, err
	}
	return version, recs, nil
}

// readRecord reads the record at r from f.
func readRecord(f io.ReaderAt, r v1Record) (*ImageRecord, error) {
	b := make([]byte, r.end-r.off)
	if _, err := f.ReadAt(b, r.off); err != nil {
		return nil, fmt.Errorf("graph: read the record of %s: %w", r.id, err)
	}
	b = bytes.TrimLeft(b, " \t\r\n,")
	var rec ImageRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("graph: read the record of %s: %w", r.id, err)
	}
	rec.RepoTags = nonNil(rec.RepoTags)
	rec.RepoDigests = nonNil(rec.RepoDigests)
	return &rec, nil
}

// createDB writes a new records database at path holding the records
// recs places in src, and closes it (fsynced). It commits every
// migrateChunk records: the file is not meta.db until openDB renames it,
// so a crash between two commits leaves only a .tmp that the next start
// removes, and the memory bbolt holds for a transaction's dirty pages is
// a chunk's, not the whole store's.
func (s *Store) createDB(path string, src io.ReaderAt, recs []v1Record) error {
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

// migrateGCPercent is the GC target while migrating (see openDB).
const migrateGCPercent = 25

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
func (s *Store) importRecords(db *bolt.DB, src io.ReaderAt, recs []v1Record) error {
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
		chunk := recs[:min(migrateChunk, len(recs))]
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
				if n > 0 && at.id == last {
					continue // a duplicate: the first wins
				}
				r, err := readRecord(src, at)
				if err != nil {
					return err
				}
				if r.ID != at.id {
					return fmt.Errorf("graph: the record at byte %d changed while it was read", at.off)
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
		if err := putSortedChunks(db, w.bucket, w.kvs); err != nil {
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
// yet (the migration's), 10 × migrateChunk keys a transaction (an index
// key is ~20 times smaller than a record and its summary).
func putSortedChunks(db *bolt.DB, bucket []byte, kvs []kv) error {
	sortKVs(kvs) // once: each chunk is then put as it is
	for len(kvs) > 0 {
		chunk := kvs[:min(10*migrateChunk, len(kvs))]
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

// finishStub makes images.json the version-2 stub, keeping a version-1
// file as images.json.v1 (steps 3 and 4). meta.db exists.
func (s *Store) finishStub() error {
	dir := filepath.Join(s.root, wharfDir)
	p := filepath.Join(dir, recordsFile)
	version, ok, err := s.readRecordsVersion(recordsFile)
	if err != nil {
		return err
	}
	if ok {
		switch {
		case version == dbVersion:
			return nil
		case version > dbVersion:
			return unsupportedVersion(p, version)
		case version == recordsVer:
			if err := os.Rename(p, filepath.Join(dir, recordsV1)); err != nil {
				return fmt.Errorf("graph: keep the migrated records as %s: %w", recordsV1, err)
			}
			if err := syncDir(dir); err != nil {
				return err
			}
			if err := s.step(stepV1Kept); err != nil {
				return err
			}
		default:
			return unsupportedVersion(p, version)
		}
	}
	b, err := json.Marshal(recordsDoc{Version: dbVersion, Images: []*ImageRecord{}, Note: stubNote})
	if err != nil {
		return err
	}
	if err := s.writeFileAtomic(dir, recordsFile, b); err != nil {
		return fmt.Errorf("graph: write the %s stub: %w", recordsFile, err)
	}
	return s.step(stepStub)
}
