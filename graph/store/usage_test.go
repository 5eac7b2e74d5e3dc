package store

import (
	"os"
	"path/filepath"
	"testing"
)

// BlobUsage counts the blob files and their bytes, and nothing else under
// blobs/ (a stray file, a directory).
func TestBlobUsageCountsBlobFiles(t *testing.T) {
	s := newTestStore(t)
	n0, b0, err := s.BlobUsage()
	must(t, err)
	lease := s.NewLease()
	defer lease.Release()
	a, _ := writeTestBlob(t, lease, "", []byte("first blob"))
	b, _ := writeTestBlob(t, lease, "", []byte("the second, longer blob"))
	writeTestBlob(t, lease, "", []byte("first blob")) // the same content again: one file
	must(t, os.WriteFile(filepath.Join(s.root, BlobsDir, "sha256", "not-a-digest"), []byte("stray"), 0o600))
	must(t, os.Mkdir(filepath.Join(s.root, BlobsDir, "sha256", "0000000000000000000000000000000000000000000000000000000000000000"), 0o700))
	n, size, err := s.BlobUsage()
	must(t, err)
	if n-n0 != 2 || size-b0 != a.Size+b.Size {
		t.Errorf("BlobUsage = %d blobs, %d bytes; want %d and %d more than %d, %d", n, size, 2, a.Size+b.Size, n0, b0)
	}
}
