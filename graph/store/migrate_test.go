package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// v1Root makes a data-root as a wharf of records version 1 left it: blobs,
// index.json and wharf/images.json, no meta.db. It returns the root, the
// names to look up and the images.json bytes.
func v1Root(t *testing.T) (string, []string, []byte) {
	t.Helper()
	root := t.TempDir()
	s := openTestStore(t, root)
	a := putTestImage(t, s, testImage{tags: []string{"a:1", "example.com/team/a:2"}, digests: []string{"a"}, layers: []string{"a", "shared"}})
	putTagged(t, s, "b:1", "b")
	c := putTagged(t, s, "", "c")
	recs := s.Snapshot()
	must(t, s.Close())
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	b, err := json.Marshal(recordsDoc{Version: recordsVer, Images: recs})
	must(t, err)
	wd := filepath.Join(root, wharfDir)
	for _, n := range []string{dbFile, recordsFile, recordsV1} {
		if err := os.Remove(filepath.Join(wd, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(wd, recordsFile), b, 0o600))
	names := []string{"a:1", "example.com/team/a:2", "b:1", "a@" + a.Manifest.Digest.String(), c.ID.String(), c.ID.Encoded()[:12]}
	return root, names, b
}

// assertMigrated: every image still resolves, the check is clean, the
// stub and the kept version-1 file are in place, no temp file is left.
func assertMigrated(t *testing.T, s *Store, names []string, v1 []byte) {
	t.Helper()
	for _, n := range names {
		if _, err := s.Lookup(n); err != nil {
			t.Errorf("after migration, %s: %v", n, err)
		}
	}
	if s.Count() != 3 {
		t.Errorf("Count = %d, want 3", s.Count())
	}
	dbConsistent(t, s)
	checkClean(t, s)
	wd := filepath.Join(s.root, wharfDir)
	stub, err := os.ReadFile(filepath.Join(wd, recordsFile))
	must(t, err)
	var doc recordsDoc
	must(t, json.Unmarshal(stub, &doc))
	if doc.Version != dbVersion || len(doc.Images) != 0 || doc.Note == "" {
		t.Errorf("images.json after migration: %s", stub)
	}
	kept, err := os.ReadFile(filepath.Join(wd, recordsV1))
	must(t, err)
	if !bytes.Equal(kept, v1) {
		t.Errorf("images.json.v1 differs from the migrated images.json")
	}
	if _, err := os.Stat(filepath.Join(wd, dbFile+".tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("meta.db.tmp left: %v", err)
	}
}

// TestMigrateV1Records: a version-1 data-root is migrated at its first
// start, and the migrated store keeps working and survives a restart.
func TestMigrateV1Records(t *testing.T) {
	root, names, v1 := v1Root(t)
	s := openTestStore(t, root)
	assertMigrated(t, s, names, v1)
	putTagged(t, s, "d:1", "d")
	deleteImage(t, s, "b:1", true)
	must(t, s.Close())
	s2 := openTestStore(t, root)
	if _, err := s2.Lookup("d:1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Lookup("b:1"); err == nil {
		t.Fatal("b:1 deleted after the migration is back")
	}
	checkClean(t, s2)
}

// TestMigrateCrashAtEachStep: a migration stopped after any of its steps
// (as a kill -9 would stop it) leaves a data-root the next start-up opens,
// with every record.
func TestMigrateCrashAtEachStep(t *testing.T) {
	for _, step := range []string{stepTmpWritten, stepRenamed, stepV1Kept, stepStub} {
		t.Run(step, func(t *testing.T) {
			root, names, v1 := v1Root(t)
			crash := errors.New("crash")
			_, err := Open(context.Background(), Options{Root: root, Logger: quietLogger(), stopAfter: func(s string) error {
				if s == step {
					return crash
				}
				return nil
			}})
			if !errors.Is(err, crash) {
				t.Fatalf("Open stopped after %s: %v", step, err)
			}
			wd := filepath.Join(root, wharfDir)
			exists := func(n string) bool { _, err := os.Stat(filepath.Join(wd, n)); return err == nil }
			// What the crash left, as the table in BOLT.md says.
			want := map[string][]bool{ // meta.db.tmp, meta.db, images.json, images.json.v1
				stepTmpWritten: {true, false, true, false},
				stepRenamed:    {false, true, true, false},
				stepV1Kept:     {false, true, false, true},
				stepStub:       {false, true, true, true},
			}[step]
			got := []bool{exists(dbFile + ".tmp"), exists(dbFile), exists(recordsFile), exists(recordsV1)}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("after %s: tmp, db, images.json, v1 exist = %v, want %v", step, got, want)
				}
			}
			s := openTestStore(t, root)
			assertMigrated(t, s, names, v1)
		})
	}
}

// TestRecordsStubWithoutDBRefused: a migrated data-root whose meta.db is
// gone is refused with the way back, not opened as an empty store (which
// would collect every blob).
func TestRecordsStubWithoutDBRefused(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root)
	putTagged(t, s, "a:1", "a")
	must(t, s.Close())
	must(t, os.Remove(filepath.Join(root, wharfDir, dbFile)))
	_, err := Open(context.Background(), Options{Root: root, Logger: quietLogger()})
	if err == nil || !strings.Contains(err.Error(), "meta.db is missing") {
		t.Fatalf("Open without meta.db: %v", err)
	}
	if n := len(blobSet(t, &Store{root: root})); n != 3 {
		t.Fatalf("%d blobs left, want 3", n)
	}
}

// TestNewerVersionsRefused: a records file or a meta.db schema newer than
// this binary knows is refused, saying so.
func TestNewerVersionsRefused(t *testing.T) {
	t.Run("images.json", func(t *testing.T) {
		root := t.TempDir()
		must(t, os.MkdirAll(filepath.Join(root, wharfDir), 0o700))
		must(t, os.WriteFile(filepath.Join(root, wharfDir, recordsFile), []byte(`{"version":3,"images":[]}`), 0o600))
		_, err := Open(context.Background(), Options{Root: root, Logger: quietLogger()})
		if err == nil || !strings.Contains(err.Error(), "unsupported version 3") || !strings.Contains(err.Error(), "newer wharf") {
			t.Fatalf("Open: %v", err)
		}
	})
	t.Run("meta.db", func(t *testing.T) {
		root := t.TempDir()
		s := openTestStore(t, root)
		must(t, s.Close())
		db, err := bolt.Open(filepath.Join(root, wharfDir, dbFile), 0o600, nil)
		must(t, err)
		must(t, db.Update(func(tx *bolt.Tx) error { return putU64(tx.Bucket(bucketMeta), keyVersion, dbVersion+1) }))
		must(t, db.Close())
		_, err = Open(context.Background(), Options{Root: root, Logger: quietLogger()})
		if err == nil || !strings.Contains(err.Error(), "newer than this wharf knows") {
			t.Fatalf("Open: %v", err)
		}
	})
}

// TestNewStoreHasStub: a new data-root gets the version-2 stub, so that an
// older wharf refuses it rather than taking it for an empty store.
func TestNewStoreHasStub(t *testing.T) {
	s := newTestStore(t)
	b, err := os.ReadFile(filepath.Join(s.root, wharfDir, recordsFile))
	must(t, err)
	var doc recordsDoc
	must(t, json.Unmarshal(b, &doc))
	if doc.Version != dbVersion {
		t.Fatalf("images.json of a new store: %s", b)
	}
	if _, err := os.Stat(filepath.Join(s.root, wharfDir, recordsV1)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a new store has images.json.v1: %v", err)
	}
}
