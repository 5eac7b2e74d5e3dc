package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"
)

// manyV1Root writes a version-1 data-root of n images directly (as
// bench/local.go's prepareRootWith does): one shared layer, a config and a
// manifest each, one tag and one repo digest each.
func manyV1Root(t testing.TB, n int) string {
	t.Helper()
	root := t.TempDir()
	blobs := filepath.Join(root, BlobsDir, "sha256")
	must(t, os.MkdirAll(blobs, dirMode))
	must(t, os.MkdirAll(filepath.Join(root, wharfDir), dirMode))
	put := func(mt string, b []byte) ocispec.Descriptor {
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		must(t, os.WriteFile(filepath.Join(blobs, h), b, fileMode))
		return ocispec.Descriptor{MediaType: mt, Digest: digest.Digest("sha256:" + h), Size: int64(len(b))}
	}
	layer := put(ocispec.MediaTypeImageLayer, []byte("not a tar: the migration does not read layers"))
	created := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	recs := make([]*ImageRecord, 0, n)
	for i := 0; i < n; i++ {
		cfg := ocispec.Image{Created: &created, Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"},
			Config: ocispec.ImageConfig{Cmd: []string{"/bin/sh"}, Labels: map[string]string{"n": fmt.Sprint(i)}},
			RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layer.Digest}}}
		cb, err := json.Marshal(cfg)
		must(t, err)
		cd := put(ocispec.MediaTypeImageConfig, cb)
		m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cd, Layers: []ocispec.Descriptor{layer}}
		m.SchemaVersion = 2
		mb, err := json.Marshal(m)
		must(t, err)
		md := put(ocispec.MediaTypeImageManifest, mb)
		name := fmt.Sprintf("127.0.0.1:5000/many/img-%d", i)
		recs = append(recs, &ImageRecord{ID: cd.Digest, Target: md, Manifest: md,
			RepoTags: []string{name + ":v1"}, RepoDigests: []string{name + "@" + md.Digest.String()},
			Created: created, LastTagTime: created})
	}
	b, err := json.Marshal(recordsDoc{Version: recordsVer, Images: recs})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(root, wharfDir, recordsFile), b, fileMode))
	return root
}

// TestMigrationSizeAndTime: the migration of a 4,001-image version-1 store
// writes meta.db's pages nearly full. Before importRecords put its keys in
// order with FillPercent 0.9, bbolt's pages were allocated at 2.26× the
// bytes they held (5,000 images: meta.db 48.9 MB, 9,782 bytes per image;
// 20,000: 145 MB, and 13.6 s to open against 6.7 s after). -v logs the
// numbers; WHARF_MIGRATE_N changes the size.
//
// Its default size spans three of the migration's transactions (of
// testChunk records; WHARF_MIGRATE_N runs with migrateChunk): the pages
// stay full across commits, and the store is whole (dbConsistent).
func TestMigrationSizeAndTime(t *testing.T) {
	n, chunk := 2*testChunk+1, testChunk
	if v, err := strconv.Atoi(os.Getenv("WHARF_MIGRATE_N")); err == nil && v > 0 {
		n, chunk = v, migrateChunk
	}
	root := manyV1Root(t, n)
	t0 := time.Now()
	s := openChunked(t, root, chunk)
	took := time.Since(t0)
	if s.Count() != n {
		t.Fatalf("Count = %d", s.Count())
	}
	var alloc, inuse int
	must(t, s.db.View(func(btx *bolt.Tx) error {
		for _, name := range append(allBuckets, bucketSummaries) {
			st := btx.Bucket(name).Stats()
			alloc += st.BranchAlloc + st.LeafAlloc
			inuse += st.BranchInuse + st.LeafInuse
		}
		return nil
	}))
	fi, err := os.Stat(filepath.Join(root, wharfDir, dbFile))
	must(t, err)
	ratio := float64(alloc) / float64(inuse)
	t.Logf("%d images: open with migration %s; meta.db %d bytes (%d per image); pages %d bytes for %d in use (%.2f×)",
		n, took.Round(time.Millisecond), fi.Size(), fi.Size()/int64(n), alloc, inuse, ratio)
	if ratio > 1.5 {
		t.Errorf("migrated meta.db's pages are allocated at %.2f× the bytes they hold (want ≤ 1.5×: written in key order, 90%% full)", ratio)
	}
	dbConsistent(t, s)
}
