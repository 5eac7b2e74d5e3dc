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
	"os"
	"path/filepath"
	"sort"
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
		recs, err := s.readV1Records()
		if err != nil {
			return err
		}
		if err := s.createDB(tmp, recs); err != nil {
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

// readRecordsFile reads wharf/<name>; ok is false when it does not exist.
func (s *Store) readRecordsFile(name string) (doc recordsDoc, ok bool, err error) {
	p := filepath.Join(s.root, wharfDir, name)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return doc, false, nil
	}
	if err != nil {
		return doc, false, err
	}
	defer f.Close()
	if err := json.NewDecoder(LimitReader(f, maxRecordsSize)).Decode(&doc); err != nil {
		return doc, false, fmt.Errorf("graph: read %s: %w", p, err)
	}
	return doc, true, nil
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

// readV1Records reads the records to migrate: images.json of version 1, or
// none (a new store).
func (s *Store) readV1Records() ([]*ImageRecord, error) {
	p := filepath.Join(s.root, wharfDir, recordsFile)
	doc, ok, err := s.readRecordsFile(recordsFile)
	if err != nil || !ok {
		return nil, err
	}
	switch doc.Version {
	case recordsVer:
	case dbVersion:
		return nil, fmt.Errorf("graph: %s is the stub of a migrated store, but %s is missing: "+
			"the image records are lost (restore %s, or %s to go back to the records as they were before the migration)",
			p, dbFile, dbFile, recordsV1)
	default:
		return nil, unsupportedVersion(p, doc.Version)
	}
	var out []*ImageRecord
	for _, r := range doc.Images {
		if r == nil || r.ID.Validate() != nil {
			continue
		}
		r.RepoTags = nonNil(r.RepoTags)
		r.RepoDigests = nonNil(r.RepoDigests)
		out = append(out, r)
	}
	return out, nil
}

// createDB writes a new records database at path holding recs, in one
// transaction, and closes it (fsynced).
func (s *Store) createDB(path string, recs []*ImageRecord) error {
	db, err := bolt.Open(path, fileMode, boltOptions())
	if err != nil {
		return fmt.Errorf("graph: create %s: %w", path, err)
	}
	err = db.Update(func(btx *bolt.Tx) error {
		if err := initSchema(btx); err != nil {
			return err
		}
		return s.importRecords(btx, recs)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("graph: write %s: %w", path, err)
	}
	return nil
}

// importRecords writes recs into a new database: the records, their
// references (a reference two records claim stays with the first in ID
// order, and leaves the other's lists), their targets and the blobs they
// keep alive, read from their documents now.
//
// Every bucket is written in key order. bbolt splits a transaction's nodes
// only at commit, so one transaction's puts into a bucket go into one
// growing node, and a put out of key order moves the node's tail: the
// blobs pairs of 50,000 images sharing three layers, put image by image,
// took ~38 s of memmove (BOLT.md). images, uses and summaries are keyed
// by image ID, and recs is sorted by it; refs, targets and blobs are
// gathered, sorted and then put.
func (s *Store) importRecords(btx *bolt.Tx, recs []*ImageRecord) error {
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	images, uses, sums := btx.Bucket(bucketImages), btx.Bucket(bucketUses), btx.Bucket(bucketSummaries)
	// Written in key order, the pages can be filled whole (bbolt's own
	// advice for appends); the default (half) left 50,000 images' records
	// and summaries two to a 4 KiB page: a 357 MB meta.db.
	for _, b := range []*bolt.Bucket{images, uses, sums, btx.Bucket(bucketRefs), btx.Bucket(bucketTargets), btx.Bucket(bucketBlobs), btx.Bucket(bucketLabels)} {
		b.FillPercent = bulkFill
	}
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
	for _, r := range recs {
		if n > 0 && r.ID == last {
			continue // a duplicate: the first wins
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
	for _, w := range []struct {
		b   *bolt.Bucket
		kvs []kv
	}{{btx.Bucket(bucketRefs), refs}, {btx.Bucket(bucketTargets), targets}, {btx.Bucket(bucketBlobs), blobs}, {btx.Bucket(bucketLabels), labels}} {
		if err := putSorted(w.b, w.kvs); err != nil {
			return err
		}
	}
	// The migration read every manifest once: the caches would otherwise
	// start out holding the whole store.
	s.metaMu.Lock()
	s.meta.Purge()
	s.refs.Purge()
	s.metaMu.Unlock()
	m := btx.Bucket(bucketMeta)
	if err := putU64(m, keyCount, n); err != nil {
		return err
	}
	if err := putIndexGens(m, 1); err != nil {
		return err
	}
	return putU64(m, keyGen, 1)
}

// bulkFill is the FillPercent of a bucket written in key order in one
// transaction (the migration, the summaries' fill).
const bulkFill = 1.0

// kv is one key and value to put.
type kv struct{ k, v []byte }

// putSorted puts kvs into b in key order (see importRecords).
func putSorted(b *bolt.Bucket, kvs []kv) error {
	sort.Slice(kvs, func(i, j int) bool { return bytes.Compare(kvs[i].k, kvs[j].k) < 0 })
	for _, e := range kvs {
		if err := b.Put(e.k, e.v); err != nil {
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
	doc, ok, err := s.readRecordsFile(recordsFile)
	if err != nil {
		return err
	}
	if ok {
		switch {
		case doc.Version == dbVersion:
			return nil
		case doc.Version > dbVersion:
			return unsupportedVersion(p, doc.Version)
		case doc.Version == recordsVer:
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
			return unsupportedVersion(p, doc.Version)
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
