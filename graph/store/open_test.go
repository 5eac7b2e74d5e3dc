package store

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
)

// TestOpenLeavesOrphansToTheScrub: start-up removes the ingest area's
// leftovers and makes the data-root 0700 with files 0600 (stores written by
// earlier versions were 0755/0644), but does not walk blobs/: blobs no
// record uses (left by a crash) are still there when Open returns. The
// scrub then takes them out of blobs/ (into the partial downloads), keeps
// every blob a record uses, and reports what it took; a check afterwards
// carries its report.
func TestOpenLeavesOrphansToTheScrub(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root)
	rec := putTestImage(t, s, testImage{tags: []string{"a:1"}, layers: []string{"a", "b"}})
	keep := blobSet(t, s)
	s.Close()

	orphan := digest.FromString("orphan")
	orphan512 := digest.SHA512.FromString("orphan")
	orphans := []string{
		writeFile(t, root, filepath.Join(BlobsDir, "sha256", orphan.Encoded()), "orphan", 0o644),
		writeFile(t, root, filepath.Join(BlobsDir, "sha512", orphan512.Encoded()), "orphan", 0o644),
	}
	leftovers := []string{
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
	for _, p := range orphans {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("start-up touched the orphan %s: %v", p, err)
		}
	}
	assertModes(t, root)
	if got := s2.LastScrub(); got != nil {
		t.Fatalf("a scrub before any ran: %+v", got)
	}

	rep := s2.Scrub(context.Background())
	if rep.Error != "" || rep.CollectedBlobs != 2 || rep.CollectedBytes != 2*int64(len("orphan")) ||
		fmt.Sprint(rep.Collected) != fmt.Sprint(sortedDigests(map[digest.Digest]bool{orphan: true, orphan512: true})) {
		t.Fatalf("scrub collected %d blobs, %d bytes, %v (error %q); want the two orphans", rep.CollectedBlobs, rep.CollectedBytes, rep.Collected, rep.Error)
	}
	if rep.Images != 1 || rep.Blobs != len(keep) || rep.ProblemCount != 0 || len(rep.Problems) != 0 {
		t.Fatalf("scrub's check: %d images, %d blobs, problems %d %v", rep.Images, rep.Blobs, rep.ProblemCount, rep.Problems)
	}
	if !rep.Finished.After(rep.Started) && !rep.Finished.Equal(rep.Started) {
		t.Fatalf("scrub finished %v before it started %v", rep.Finished, rep.Started)
	}
	if got := blobSet(t, s2); len(got) != len(keep) {
		t.Fatalf("blobs after the scrub: %v, want %v", sortedDigests(got), sortedDigests(keep))
	}
	for d := range keep {
		if !s2.HasBlob(d) {
			t.Fatalf("blob %s of a record collected by the scrub", d)
		}
	}
	// The orphans are partial downloads now: a pull of them resumes.
	if n, b := s2.PartialUsage(); n != 2 || b != 2*int64(len("orphan")) {
		t.Fatalf("partials after the scrub: %d, %d bytes", n, b)
	}
	if got, err := s2.Lookup("a:1"); err != nil || got.ID != rec.ID {
		t.Fatalf("a:1 after start-up: %v %v", got, err)
	}
	crep := checkClean(t, s2)
	if crep.Blobs != len(keep) {
		t.Fatalf("check counts %d blobs, want %d", crep.Blobs, len(keep))
	}
	// A check carries the scrub's report.
	full, err := s2.Check(context.Background(), false)
	must(t, err)
	if full.LastScrub == nil || full.LastScrub.CollectedBlobs != 2 || !full.LastScrub.Started.Equal(rep.Started) {
		t.Fatalf("check's LastScrub %+v, want the scrub's", full.LastScrub)
	}
}

// TestOpenReadsNoBlobDirectory: Open lists no blobs/ directory, whatever
// the store's size. blobs/sha512 is made a file, which any listing of it
// fails on (as root too, unlike a mode): Open still opens the store (it
// failed on it while it collected orphans), and the scrub, which lists
// it, reports the failure.
func TestOpenReadsNoBlobDirectory(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root)
	putTestImage(t, s, testImage{tags: []string{"a:1"}, layers: []string{"a"}})
	s.Close()
	writeFile(t, root, filepath.Join(BlobsDir, "sha512"), "not a directory", 0o600)
	s2 := openTestStore(t, root)
	if _, err := s2.Lookup("a:1"); err != nil {
		t.Fatalf("a:1: %v", err)
	}
	if rep := s2.Scrub(context.Background()); !strings.Contains(rep.Error, "not a directory") {
		t.Fatalf("the scrub listed blobs/sha512, a file: %+v", rep)
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
