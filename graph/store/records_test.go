package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// storeView is everything a failed change must leave as it was: what
// Lookup and Snapshot answer, the records database and index.json byte for
// byte (index.json once caught up: it trails the records by design), and
// the blobs.
type storeView struct {
	lookups  string
	snapshot string
	records  []byte
	index    []byte
	blobs    string
	meta     []string // files beside the records and index (no temp files left)
}

func viewOf(t *testing.T, s *Store, names []string) storeView {
	t.Helper()
	var v storeView
	var lk []string
	for _, n := range names {
		r, err := s.Lookup(n)
		if err != nil {
			lk = append(lk, n+" → "+err.Error())
			continue
		}
		lk = append(lk, fmt.Sprintf("%s → %s %v %v %s", n, r.ID, r.RepoTags, r.RepoDigests, r.LastTagTime))
	}
	v.lookups = strings.Join(lk, "\n")
	must(t, s.FlushIndex())
	snap := s.Snapshot()
	sort.Slice(snap, func(i, j int) bool { return snap[i].ID < snap[j].ID })
	sb, err := json.Marshal(snap)
	must(t, err)
	v.snapshot = string(sb)
	v.records, err = os.ReadFile(filepath.Join(s.root, wharfDir, dbFile))
	must(t, err)
	v.index, err = os.ReadFile(filepath.Join(s.root, IndexFile))
	must(t, err)
	v.blobs = fmt.Sprint(sortedDigests(blobSet(t, s)))
	for _, dir := range []string{s.root, filepath.Join(s.root, wharfDir)} {
		ents, err := os.ReadDir(dir)
		must(t, err)
		for _, e := range ents {
			v.meta = append(v.meta, filepath.Join(dir, e.Name()))
		}
	}
	return v
}

func (v storeView) diff(w storeView) string {
	var out []string
	if v.lookups != w.lookups {
		out = append(out, "Lookup:\n"+v.lookups+"\n---\n"+w.lookups)
	}
	if v.snapshot != w.snapshot {
		out = append(out, "Snapshot:\n"+v.snapshot+"\n---\n"+w.snapshot)
	}
	if !bytes.Equal(v.records, w.records) {
		out = append(out, "meta.db changed")
	}
	if !bytes.Equal(v.index, w.index) {
		out = append(out, "index.json:\n"+string(v.index)+"\n---\n"+string(w.index))
	}
	if v.blobs != w.blobs {
		out = append(out, "blobs:\n"+v.blobs+"\n---\n"+w.blobs)
	}
	if fmt.Sprint(v.meta) != fmt.Sprint(w.meta) {
		out = append(out, fmt.Sprintf("files: %v\n---\n%v", v.meta, w.meta))
	}
	return strings.Join(out, "\n")
}

// TestFailedUpdateChangesNothing: an Update whose fn fails, or whose write
// fails (a full disk), leaves Lookup, Snapshot, images.json, index.json
// and the blobs exactly as they were; the store keeps working afterwards.
func TestFailedUpdateChangesNothing(t *testing.T) {
	errFn := errors.New("fn failed")
	// change edits every kind of state: a tag moved, a tag and a digest
	// reference dropped, a tag time edited, an image deleted.
	change := func(tx *Txn) error {
		a, err := tx.Lookup("a:1")
		if err != nil {
			return err
		}
		b, err := tx.Lookup("b:1")
		if err != nil {
			return err
		}
		a.LastTagTime = time.Unix(1<<32, 0).UTC()
		if err := tx.PointRef("docker.io/library/b:1", a.ID); err != nil {
			return err
		}
		tx.DropRef("docker.io/library/a:2")
		for _, d := range a.RepoDigests {
			tx.DropRef(d)
		}
		tx.Delete(b.ID)
		return nil
	}
	tests := []struct {
		name      string
		fn        func(tx *Txn) error
		failWrite func(name string) error
		wantErr   error
	}{
		{"fn fails after editing", func(tx *Txn) error {
			if err := change(tx); err != nil {
				return err
			}
			return errFn
		}, nil, errFn},
		{"fn fails at once", func(tx *Txn) error { return errFn }, nil, errFn},
		{"meta.db commit fails", change, func(name string) error {
			if name == dbFile {
				return syscall.ENOSPC
			}
			return nil
		}, syscall.ENOSPC},
		{"every write fails", change, func(string) error { return syscall.ENOSPC }, syscall.ENOSPC},
	}
	names := []string{"a:1", "a:2", "b:1", "c:1"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			a := putTestImage(t, s, testImage{tags: []string{"a:1", "a:2"}, digests: []string{"a"}, layers: []string{"a", "shared"}})
			b := putTestImage(t, s, testImage{tags: []string{"b:1"}, layers: []string{"b", "shared"}})
			putTagged(t, s, "c:1", "c")
			names := append(names, a.ID.String(), b.ID.String(), "a@"+a.Manifest.Digest.String())
			before := viewOf(t, s, names)
			s.failWrite = tt.failWrite
			freed, err := s.Update(true, tt.fn)
			if !errors.Is(err, tt.wantErr) || freed != 0 {
				t.Fatalf("Update = %d, %v; want %v", freed, err, tt.wantErr)
			}
			if d := before.diff(viewOf(t, s, names)); d != "" {
				t.Fatalf("a failed Update changed the store:\n%s", d)
			}
			checkClean(t, s)
			// The change succeeds once the disk has room.
			s.failWrite = nil
			if _, err := s.Update(true, change); err != nil {
				t.Fatal(err)
			}
			if r, err := s.Lookup("b:1"); err != nil || r.ID != a.ID {
				t.Fatalf("after the retried change, b:1 = %v %v", r, err)
			}
			checkClean(t, s)
		})
	}
}

// TestFailedPutChangesNothing: a Put whose write fails records nothing, and
// the operation's Release takes its new blobs, not the shared ones.
func TestFailedPutChangesNothing(t *testing.T) {
	for _, file := range []string{dbFile} {
		t.Run(file, func(t *testing.T) {
			s := newTestStore(t)
			putTestImage(t, s, testImage{tags: []string{"a:1"}, layers: []string{"a", "shared"}})
			names := []string{"a:1", "new:1"}
			before := viewOf(t, s, names)
			s.failWrite = func(name string) error {
				if name == file {
					return syscall.ENOSPC
				}
				return nil
			}
			lease := s.NewLease()
			rec := writeTestImage(t, lease, testImage{tags: []string{"new:1", "a:1"}, layers: []string{"new", "shared"}})
			if err := s.Put(lease, rec); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Put = %v, want ENOSPC", err)
			}
			lease.Release()
			if d := before.diff(viewOf(t, s, names)); d != "" {
				t.Fatalf("a failed Put changed the store:\n%s", d)
			}
			checkClean(t, s)
		})
	}
}
