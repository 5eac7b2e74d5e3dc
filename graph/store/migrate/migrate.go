// Package migrate is the store's upgrade path: a data-root written by a
// wharf that kept its records in wharf/images.json (version 1) is migrated
// into wharf/meta.db at its first start, crash-safe. The steps, and what a start-up finds after a crash at
// each (BOLT.md has the table):
//
//  1. Write every record into meta.db.tmp, in one transaction, committed
//     (fsync), and close it.            crash: meta.db.tmp is removed, the
//     migration starts over from images.json
//  2. Rename meta.db.tmp → meta.db, fsync wharf/: the commit point.
//     crash: meta.db and the version-1
//     images.json: the migration committed;
//     steps 3–4 are finished
//  3. Rename images.json → images.json.v1, fsync wharf/.
//     crash: meta.db, images.json.v1, no
//     images.json: step 4 is finished
//  4. Write images.json as a version-2 stub (atomically).
//
// The records themselves (step 1) are the store's to write (Config.Create):
// this package reads images.json, runs the steps and leaves the files.
//
// The stub is what keeps an older wharf off the migrated store: it refuses
// it ("unsupported version 2") instead of finding no images.json, taking
// the store for an empty one, and collecting every blob at start-up. A new
// store gets the stub too, for the same reason. images.json.v1 is kept as
// it was read; it is never read again (BOLT.md: why it stays).
package migrate

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

	"github.com/opencontainers/go-digest"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/graph/store/content"
	"github.com/wharfproject/wharf/internal/atomicfile"
)

// The records files, in the store's wharf/ directory.
const (
	RecordsFile = "images.json"
	RecordsV1   = "images.json.v1"
	// V1 is the version of the records images.json held.
	V1 = 1
)

// maxRecordsSize caps images.json at its migration (256 MiB): 5,000 images
// take about 5 MiB, so anything near the cap is corruption, not data.
const maxRecordsSize = 256 << 20

// Migration steps, as Config.Step names them.
const (
	StepTmpWritten = "tmp-written"
	StepRenamed    = "renamed"
	StepV1Kept     = "v1-kept"
	StepStub       = "stub-written"
)

const stubNote = "wharf keeps its image records in meta.db (bbolt) since records version 2; " +
	"this file only stops an older wharf from taking the data-root for an empty one. " +
	"A wharf that reads only version 1 cannot use this data-root: downgrading is not supported."

// gcPercent is the GC target while migrating (see Run).
const gcPercent = 25

// Config is what the migration needs of the store.
type Config struct {
	Dir       string // the store's wharf/ directory
	DBFile    string // the records database's name in Dir (meta.db)
	DBVersion int    // the records version of the database (2)
	// Create writes a new records database at path holding the records
	// recs places in src (none and a nil src for a new store), committed
	// and closed.
	Create func(path string, src io.ReaderAt, recs []Record) error
	// WriteFile writes Dir/name atomically.
	WriteFile func(dir, name string, data []byte) error
	// Step, when set (tests), is called after each step; an error it
	// returns stops the migration there, as a crash would.
	Step func(name string) error
	Log  *logrus.Entry
}

func (c *Config) step(name string) error {
	if c.Step != nil {
		return c.Step(name)
	}
	return nil
}

// Run makes Dir hold a records database and the stub: it migrates
// images.json of version 1 (or creates an empty database) when the
// database is missing, and finishes an interrupted migration.
func Run(c Config) error {
	dbPath := filepath.Join(c.Dir, c.DBFile)
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
		defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
		src, recs, err := c.readV1Records()
		if err != nil {
			return err
		}
		err = c.Create(tmp, src, recs)
		if src != nil {
			src.Close()
		}
		if err != nil {
			os.Remove(tmp)
			return err
		}
		if err := c.step(StepTmpWritten); err != nil {
			return err
		}
		if err := os.Rename(tmp, dbPath); err != nil {
			return fmt.Errorf("graph: commit the records database: %w", err)
		}
		if err := atomicfile.SyncDir(c.Dir); err != nil {
			return err
		}
		if err := c.step(StepRenamed); err != nil {
			return err
		}
		if len(recs) > 0 {
			c.Log.WithField("images", len(recs)).Info("image records migrated from wharf/images.json to wharf/meta.db")
		}
	} else if err != nil {
		return err
	}
	return c.finishStub()
}

// readRecordsVersion reads the version of wharf/<name>; ok is false when
// it does not exist. The records are skipped, not decoded: 50,000 of them
// decoded are ~200 MiB (finishStub only needs the version).
func (c *Config) readRecordsVersion(name string) (version int, ok bool, err error) {
	p := filepath.Join(c.Dir, name)
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
	if err := json.NewDecoder(content.LimitReader(f, maxRecordsSize)).Decode(&doc); err != nil {
		return 0, false, fmt.Errorf("graph: read %s: %w", p, err)
	}
	return doc.Version, true, nil
}

// unsupportedVersion is the refusal of a records file this binary does not
// read: the same words as the refusal of version 2 by a wharf that knows
// only version 1, and what it means.
func (c *Config) unsupportedVersion(p string, v int) error {
	if v > c.DBVersion {
		return fmt.Errorf("graph: %s: unsupported version %d: the data-root was written by a newer wharf "+
			"(this one reads records versions %d and %d); downgrading is not supported", p, v, V1, c.DBVersion)
	}
	return fmt.Errorf("graph: %s: unsupported version %d", p, v)
}

// Record is where one record of a version-1 images.json is in the file
// (bytes [Off, End): the value, maybe after the comma that precedes it).
type Record struct {
	ID       digest.Digest
	Off, End int64
}

// Bytes reads the record r from f.
func (r Record) Bytes(f io.ReaderAt) ([]byte, error) {
	b := make([]byte, r.End-r.Off)
	if _, err := f.ReadAt(b, r.Off); err != nil {
		return nil, err
	}
	return bytes.TrimLeft(b, " \t\r\n,"), nil
}

// readV1Records finds the records to migrate in images.json of version 1:
// each record's ID and place in the file, in ID order (a duplicated ID
// keeps its first place first), and the file open to read them from; none
// and a nil file for a new store. The records themselves are read one at
// a time as they are written (Config.Create): decoded all at once, 50,000
// of them took the migration to a 538 MiB peak (bench case 11).
func (c *Config) readV1Records() (*os.File, []Record, error) {
	p := filepath.Join(c.Dir, RecordsFile)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	version, recs, err := Scan(content.LimitReader(f, maxRecordsSize))
	if err == nil {
		switch version {
		case V1:
		case c.DBVersion:
			err = fmt.Errorf("graph: %s is the stub of a migrated store, but %s is missing: "+
				"the image records are lost (restore %s, or %s to go back to the records as they were before the migration)",
				p, c.DBFile, c.DBFile, RecordsV1)
		default:
			err = c.unsupportedVersion(p, version)
		}
	} else {
		err = fmt.Errorf("graph: read %s: %w", p, err)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	return f, recs, nil
}

// Scan reads a records document ({"version":N,"images":[…]}, other
// keys skipped) and returns its version and where each record with a
// valid ID is; a null or ID-less record is left out, as before.
func Scan(r io.Reader) (version int, recs []Record, err error) {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, nil, fmt.Errorf("not a records document (%v)", err)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0, nil, err
		}
		// Keys match as encoding/json matches them to the records document's
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
					recs = append(recs, Record{ID: rec.ID, Off: off, End: dec.InputOffset()})
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

// finishStub makes images.json the version-2 stub, keeping a version-1
// file as images.json.v1 (steps 3 and 4). meta.db exists.
func (c *Config) finishStub() error {
	dir := c.Dir
	p := filepath.Join(dir, RecordsFile)
	version, ok, err := c.readRecordsVersion(RecordsFile)
	if err != nil {
		return err
	}
	if ok {
		switch {
		case version == c.DBVersion:
			return nil
		case version > c.DBVersion:
			return c.unsupportedVersion(p, version)
		case version == V1:
			if err := os.Rename(p, filepath.Join(dir, RecordsV1)); err != nil {
				return fmt.Errorf("graph: keep the migrated records as %s: %w", RecordsV1, err)
			}
			if err := atomicfile.SyncDir(dir); err != nil {
				return err
			}
			if err := c.step(StepV1Kept); err != nil {
				return err
			}
		default:
			return c.unsupportedVersion(p, version)
		}
	}
	b, err := json.Marshal(Stub{Version: c.DBVersion, Images: []struct{}{}, Note: stubNote})
	if err != nil {
		return err
	}
	if err := c.WriteFile(dir, RecordsFile, b); err != nil {
		return fmt.Errorf("graph: write the %s stub: %w", RecordsFile, err)
	}
	return c.step(StepStub)
}

// Stub is images.json once migrated: the version of the records database
// and no images, which a wharf that reads only version 1 refuses.
type Stub struct {
	Version int        `json:"version"`
	Images  []struct{} `json:"images"`
	Note    string     `json:"note,omitempty"`
}
