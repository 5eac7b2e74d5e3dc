package store

import (
	"os"
	"path/filepath"
	"reflect"
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

// An event's labels come from the image's stored summary: with the config
// blob gone and the metadata cache empty, Labels (and a change's
// Txn.Labels) still answer the config's labels without reading it.
func TestLabelsComeFromTheSummary(t *testing.T) {
	s := openTestStore(t, manyV1Root(t, 3))
	var rec *ImageRecord
	_, err := s.Update(false, func(tx *Txn) error {
		r, err := tx.Lookup("127.0.0.1:5000/many/img-1:v1")
		rec = r
		return err
	})
	must(t, err)
	want := map[string]string{"n": "1"}
	if got := s.Labels(rec); !reflect.DeepEqual(got, want) {
		t.Fatalf("Labels = %v, want %v", got, want)
	}
	must(t, os.Remove(filepath.Join(s.root, BlobsDir, "sha256", rec.ID.Encoded())))
	s.metaMu.Lock()
	s.meta.Purge()
	s.metaMu.Unlock()
	if got := s.Labels(rec); !reflect.DeepEqual(got, want) {
		t.Errorf("Labels with the config gone = %v, want %v from the summary", got, want)
	}
	_, err = s.Update(false, func(tx *Txn) error {
		if got := tx.Labels(rec); !reflect.DeepEqual(got, want) {
			t.Errorf("Txn.Labels with the config gone = %v, want %v from the summary", got, want)
		}
		return nil
	})
	must(t, err)
}
