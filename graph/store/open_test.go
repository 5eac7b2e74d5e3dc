package store

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
)

// TestOpenCollectsAndTightens: start-up removes blobs no record uses (left
// by a crash) and the ingest area's leftovers, keeps every blob a record
// uses, and makes the data-root 0700 with files 0600 (stores written by
// earlier versions were 0755/0644).
func TestOpenCollectsAndTightens(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root)
	rec := putTestImage(t, s, testImage{tags: []string{"a:1"}, layers: []string{"a", "b"}})
	keep := blobSet(t, s)
	s.Close()

	orphan := digest.FromString("orphan")
	orphan512 := digest.SHA512.FromString("orphan")
	leftovers := []string{
		writeFile(t, root, filepath.Join(BlobsDir, "sha256", orphan.Encoded()), "orphan", 0o644),
		writeFile(t, root, filepath.Join(BlobsDir, "sha512", orphan512.Encoded()), "orphan", 0o644),
		writeFile(t, root, filepath.Join(ingestDir, "blob-1234"), "partial", 0o644),
		writeFile(t, root, filepath.Join(ingestDir, "sub", "blob-5678"), "partial", 0o644),
	}
	// An older version's modes.
	must(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return os.Chmod(p, 0o644)
	}))

	s2 := openTestStore(t, root)
	for _, p := range leftovers {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived start-up: %v", p, err)
		}
	}
	if got := blobSet(t, s2); len(got) != len(keep) {
		t.Fatalf("blobs after start-up: %v, want %v", sortedDigests(got), sortedDigests(keep))
	}
	for d := range keep {
		if !s2.HasBlob(d) {
			t.Fatalf("blob %s of a record collected at start-up", d)
		}
	}
	if got, err := s2.Lookup("a:1"); err != nil || got.ID != rec.ID {
		t.Fatalf("a:1 after start-up: %v %v", got, err)
	}
	assertModes(t, root)
	rep := checkClean(t, s2)
	if rep.Blobs != len(keep) {
		t.Fatalf("check counts %d blobs, want %d", rep.Blobs, len(keep))
	}
}

// assertModes: root and directories 0700, files 0600.
func assertModes(t *testing.T, root string) {
	t.Helper()
	must(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fileMode
		if d.IsDir() {
			want = dirMode
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		return nil
	}))
}

// TestNewStoreModes: a store created from nothing, and every file a change
// writes, is private.
func TestNewStoreModes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "new", "root")
	s := openTestStore(t, root)
	putTagged(t, s, "a:1", "a")
	if _, err := s.Update(false, func(tx *Txn) error { tx.DropRef("docker.io/library/a:1"); return nil }); err != nil {
		t.Fatal(err)
	}
	assertModes(t, root)
}

func TestOpenRefusesEmptyRoot(t *testing.T) {
	if _, err := Open(context.Background(), Options{}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("Open with no root: %v", err)
	}
}
