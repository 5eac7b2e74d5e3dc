package content

import (
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfproject/wharf/internal/ocilayout"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Usage (the store's BlobUsage) reads the directory in batches of usageBatch entries: a store
// with more blobs than one batch (and sha512 ones beside) counts every one.
func TestBlobUsageCountsAcrossBatches(t *testing.T) {
	s := New(t.TempDir())
	n0, b0, err := s.Usage()
	must(t, err)
	want, wantBytes := 0, int64(0)
	for alg, count := range map[string]int{"sha256": 2*usageBatch + 7, "sha512": 3} {
		dir := filepath.Join(s.root, ocilayout.BlobsDir, alg)
		must(t, os.MkdirAll(dir, 0o700))
		for i := 0; i < count; i++ {
			h := sha512.Sum512([]byte(fmt.Sprint(alg, i)))
			name := hex.EncodeToString(h[:])
			if alg == "sha256" {
				name = name[:64]
			}
			must(t, os.WriteFile(filepath.Join(dir, name), make([]byte, i%5), 0o600))
			want++
			wantBytes += int64(i % 5)
		}
	}
	n, size, err := s.Usage()
	must(t, err)
	if n-n0 != want || size-b0 != wantBytes {
		t.Errorf("BlobUsage = %d blobs, %d bytes; want %d and %d more than %d, %d", n, size, want, wantBytes, n0, b0)
	}
}
