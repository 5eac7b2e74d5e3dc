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
