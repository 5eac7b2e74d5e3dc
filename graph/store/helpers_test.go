package store

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"
)

func newTestStore(t testing.TB) *Store {
	t.Helper()
	return openTestStore(t, t.TempDir())
}

func openTestStore(t testing.TB, root string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Root: root, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testChunk replaces migrateChunk in the tests whose migration or
// summaries' fill spans several transactions: a hundred records then do
// what thousands do with the production chunk.
const testChunk = 50

// openChunked is openTestStore with a migration chunk of chunk records.
func openChunked(t testing.TB, root string, chunk int) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Root: root, Logger: quietLogger(), migrateChunk: chunk})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func quietLogger() *logrus.Entry {
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	return logrus.NewEntry(log)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testLayer is a gzip layer holding one file etc/hello with content, and its
// DiffID (the digest of the uncompressed tar).
func testLayer(content string) ([]byte, digest.Digest, error) {
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, h := range []*tar.Header{
		{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(0, 0)},
		{Name: "etc/hello", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(0, 0)},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return nil, "", err
		}
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		return nil, "", err
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	var gb bytes.Buffer
	zw := gzip.NewWriter(&gb)
	if _, err := zw.Write(tb.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return gb.Bytes(), digest.FromBytes(tb.Bytes()), nil
}

// testImage describes an image for writeTestImage: one gzip layer per entry
// of layers (content of etc/hello), an OCI config with labels.
type testImage struct {
	tags    []string
	digests []string // repository names: "@<manifest digest>" is appended
	layers  []string
	labels  map[string]string
	created time.Time
	// platform defaults to linux/amd64.
	platform ocispec.Platform
}

// writeImage writes img's layers, config and manifest under lease and
// returns the record to Put (with its references). Safe to call from any
// goroutine.
func writeImage(lease *Lease, img testImage) (ImageRecord, error) {
	ctx := context.Background()
	var cfg ImageConfig
	cfg.OS, cfg.Architecture = "linux", "amd64"
	if img.platform.OS != "" {
		cfg.OS, cfg.Architecture, cfg.Variant = img.platform.OS, img.platform.Architecture, img.platform.Variant
	}
	if !img.created.IsZero() {
		c := img.created
		cfg.Created = &c
	}
	cfg.Config.Labels = img.labels
	cfg.RootFS.Type = "layers"
	layers := []ocispec.Descriptor{}
	for _, c := range img.layers {
		gz, diffID, err := testLayer(c)
		if err != nil {
			return ImageRecord{}, err
		}
		d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromBytes(gz), Size: int64(len(gz))}
		if _, err := lease.WriteBlob(ctx, d, bytes.NewReader(gz)); err != nil {
			return ImageRecord{}, err
		}
		layers = append(layers, d)
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, diffID)
	}
	cdesc, err := writeJSON(lease, ocispec.MediaTypeImageConfig, cfg)
	if err != nil {
		return ImageRecord{}, err
	}
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cdesc, Layers: layers}
	m.SchemaVersion = 2
	mdesc, err := writeJSON(lease, ocispec.MediaTypeImageManifest, m)
	if err != nil {
		return ImageRecord{}, err
	}
	rec := ImageRecord{ID: cdesc.Digest, Target: mdesc, Manifest: mdesc, RepoTags: append([]string{}, img.tags...)}
	for _, n := range img.digests {
		rec.RepoDigests = append(rec.RepoDigests, n+"@"+mdesc.Digest.String())
	}
	return rec, nil
}

// writeJSON stores v as a blob of media type mt under lease.
func writeJSON(lease *Lease, mt string, v any) (ocispec.Descriptor, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	d := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
	_, err = lease.WriteBlob(context.Background(), d, bytes.NewReader(b))
	return d, err
}

// writeTestBlob stores b as a blob of media type mt (may be empty) under
// lease and reports whether it was new.
func writeTestBlob(t testing.TB, lease *Lease, mt string, b []byte) (ocispec.Descriptor, bool) {
	t.Helper()
	d := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
	created, err := lease.WriteBlob(context.Background(), d, bytes.NewReader(b))
	must(t, err)
	return d, created
}

// writeTestIndex stores an OCI index of manifests under lease.
func writeTestIndex(t testing.TB, lease *Lease, manifests ...ocispec.Descriptor) ocispec.Descriptor {
	t.Helper()
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: manifests}
	idx.SchemaVersion = 2
	d, err := writeJSON(lease, ocispec.MediaTypeImageIndex, idx)
	must(t, err)
	return d
}

// writeTestImage is writeImage for the test goroutine.
func writeTestImage(t testing.TB, lease *Lease, img testImage) ImageRecord {
	t.Helper()
	rec, err := writeImage(lease, img)
	must(t, err)
	return rec
}

// putTestImage stores img as a whole operation (lease, write, Put, release)
// and returns its record as Lookup returns it.
func putTestImage(t testing.TB, s *Store, img testImage) *ImageRecord {
	t.Helper()
	lease := s.NewLease()
	defer lease.Release()
	rec := writeTestImage(t, lease, img)
	must(t, s.Put(lease, rec))
	got, err := s.Lookup(rec.ID.String())
	must(t, err)
	return got
}

// putTagged is putTestImage for an image with one layer and tags (tag may
// be empty: untagged).
func putTagged(t testing.TB, s *Store, tag, content string) *ImageRecord {
	t.Helper()
	img := testImage{layers: []string{content}}
	if tag != "" {
		img.tags = []string{tag}
	}
	return putTestImage(t, s, img)
}

// deleteImage removes the image name (prune: its blobs are collected).
func deleteImage(t testing.TB, s *Store, name string, prune bool) int64 {
	t.Helper()
	freed, err := s.Update(prune, func(tx *Txn) error {
		rec, err := tx.Lookup(name)
		if err != nil {
			return err
		}
		tx.Delete(rec.ID)
		return nil
	})
	must(t, err)
	return freed
}

// blobSet is the set of blob digests stored under blobs/.
func blobSet(t testing.TB, s *Store) map[digest.Digest]bool {
	t.Helper()
	out := map[digest.Digest]bool{}
	for _, alg := range []digest.Algorithm{digest.SHA256, digest.SHA512} {
		ents, _ := os.ReadDir(filepath.Join(s.root, BlobsDir, string(alg)))
		for _, e := range ents {
			out[digest.NewDigestFromEncoded(alg, e.Name())] = true
		}
	}
	return out
}

// checkClean fails unless a full check finds no problem.
func checkClean(t testing.TB, s *Store) *CheckReport {
	t.Helper()
	rep, err := s.Check(context.Background(), true)
	must(t, err)
	if len(rep.Problems) != 0 {
		t.Fatalf("check: %s", strings.Join(checkKinds(rep), "; "))
	}
	return rep
}

// ingestFiles lists the ingest area.
func ingestFiles(t testing.TB, s *Store) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(s.root, ingestDir))
	must(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// writeFile writes root/rel with mode, creating its directory.
func writeFile(t testing.TB, root, rel, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(root, rel)
	must(t, os.MkdirAll(filepath.Dir(p), 0o700))
	must(t, os.WriteFile(p, []byte(body), mode))
	must(t, os.Chmod(p, mode))
	return p
}

// recordsDoc is the JSON form of wharf/images.json (version 1: the
// records; version 2: the stub left by the migration to meta.db).
type recordsDoc struct {
	Version int            `json:"version"`
	Images  []*ImageRecord `json:"images"`
	Note    string         `json:"note,omitempty"`
}
