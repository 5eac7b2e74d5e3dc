package store

import (
	"path/filepath"
	"testing"
)

// A blob's rename into blobs/ is made durable by the fsync of its directory,
// which Commit leaves to the next records update: Put must fsync every
// pending directory before it writes the record, and must not record the
// image when that fsync fails (issue 14: one directory fsync per pull).
func TestPutSyncsBlobDirsBeforeRecording(t *testing.T) {
	s := newTestStore(t)
	lease := s.NewLease()
	defer lease.Release()
	rec := writeTestImage(t, lease, testImage{layers: []string{"a"}, tags: []string{"example.com/app:1"}})
	blobDir := filepath.Join(s.root, BlobsDir, "sha256")
	pending := s.blobs.Pending.Dirs
	if !pending()[blobDir] {
		t.Fatalf("after WriteBlob, pending dirs %v, want %s", pending(), blobDir)
	}

	// A directory whose fsync fails (it cannot even be opened): no record.
	gone := filepath.Join(t.TempDir(), "gone")
	s.blobs.Pending.Add(gone)
	if err := s.Put(lease, rec); err == nil {
		t.Fatal("Put succeeded although a blob directory could not be fsynced")
	}
	if _, err := s.Lookup("example.com/app:1"); err == nil {
		t.Fatal("image recorded although its blob directory was not fsynced")
	}
	if p := pending(); !p[blobDir] || !p[gone] {
		t.Fatalf("a failed sync forgot what it owes: %v", p)
	}

	s.blobs.Pending.Drop(gone)
	must(t, s.Put(lease, rec))
	if p := pending(); len(p) != 0 {
		t.Fatalf("after Put, pending dirs %v, want none", p)
	}
	if _, err := s.Lookup("example.com/app:1"); err != nil {
		t.Fatal(err)
	}
}
