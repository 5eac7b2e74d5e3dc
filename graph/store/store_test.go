package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestRecordsSurviveRestart(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root)
	rec := putTestImage(t, s, testImage{tags: []string{"persist:1"}, digests: []string{"persist"}, layers: []string{"p"}})
	id := rec.ID
	if _, err := s.Update(false, func(tx *Txn) error { return tx.PointRef("docker.io/library/persist:2", id) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := openTestStore(t, root)
	got, err := s2.Lookup("persist:2")
	if err != nil || got.ID != id || len(got.RepoTags) != 2 || len(got.RepoDigests) != 1 {
		t.Fatalf("after restart: %+v %v", got, err)
	}
	if _, err := s2.Lookup(id.Encoded()[:8]); err != nil {
		t.Fatalf("short ID after restart: %v", err)
	}
	if _, err := s2.Lookup("persist@" + rec.Manifest.Digest.String()); err != nil {
		t.Fatalf("digest reference after restart: %v", err)
	}
	var idx ocispec.Index
	b, _ := os.ReadFile(filepath.Join(root, "index.json"))
	json.Unmarshal(b, &idx)
	if len(idx.Manifests) != 2 {
		t.Fatalf("index.json has %d entries, want one per tag", len(idx.Manifests))
	}
	// No temp files left beside the records.
	ents, _ := os.ReadDir(filepath.Join(root, wharfDir))
	for _, e := range ents {
		if e.Name() != recordsFile && e.Name() != dbFile {
			t.Fatalf("stray file %s", e.Name())
		}
	}
	// Every blob survived the restart's collection.
	checkClean(t, s2)
}

func TestRecordsUnsupportedVersionRefused(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, wharfDir), 0o700))
	must(t, os.WriteFile(filepath.Join(root, wharfDir, recordsFile), []byte(`{"version":99,"images":[]}`), 0o600))
	if _, err := Open(t.Context(), Options{Root: root, Logger: quietLogger()}); err == nil {
		t.Fatal("records of an unknown version accepted")
	}
}

// TestPutMovesReferenceAndLeavesDangling: a tag put on a second image is
// taken from the first, which stays as a dangling image.
func TestPutMovesReferenceAndLeavesDangling(t *testing.T) {
	s := newTestStore(t)
	a := putTagged(t, s, "app:1", "a")
	b := putTagged(t, s, "app:1", "b")
	if rec, _ := s.Lookup("app:1"); rec.ID != b.ID {
		t.Fatalf("app:1 = %s, want %s", rec.ID, b.ID)
	}
	rec, err := s.Lookup(a.ID.String())
	if err != nil || len(rec.RepoTags) != 0 {
		t.Fatalf("old image should be dangling: %+v %v", rec, err)
	}
	checkClean(t, s)
}

func TestTxnRefs(t *testing.T) {
	s := newTestStore(t)
	a := putTestImage(t, s, testImage{tags: []string{"a:1", "a:2"}, digests: []string{"a"}, layers: []string{"a"}})
	b := putTagged(t, s, "b:1", "b")
	_, err := s.Update(false, func(tx *Txn) error {
		if err := tx.PointRef("docker.io/library/a:2", b.ID); err != nil {
			return err
		}
		tx.DropRef("docker.io/library/a:1")
		tx.DropRef("docker.io/library/nosuch:1") // no-op
		if err := tx.PointRef("docker.io/library/x:1", digest.FromString("nosuch")); err == nil {
			return fmt.Errorf("PointRef to a missing image succeeded")
		}
		if id, ok := tx.RefTarget("docker.io/library/a:2"); !ok || id != b.ID {
			return fmt.Errorf("RefTarget(a:2) = %s %v", id, ok)
		}
		return nil
	})
	must(t, err)
	ra, _ := s.Lookup(a.ID.String())
	rb, _ := s.Lookup(b.ID.String())
	if fmt.Sprint(ra.RepoTags, ra.RepoDigests) != fmt.Sprintf("[] [docker.io/library/a@%s]", a.Manifest.Digest) {
		t.Fatalf("a: %v %v", ra.RepoTags, ra.RepoDigests)
	}
	if fmt.Sprint(rb.RepoTags) != "[docker.io/library/a:2 docker.io/library/b:1]" {
		t.Fatalf("b: %v", rb.RepoTags)
	}
	if _, err := s.Lookup("a:1"); err == nil {
		t.Fatal("dropped tag still resolves")
	}
	checkClean(t, s)
}

func TestPutRefusesBadRecords(t *testing.T) {
	s := newTestStore(t)
	lease := s.NewLease()
	defer lease.Release()
	good := writeTestImage(t, lease, testImage{layers: []string{"x"}})
	missing := digest.FromString("not stored")
	tests := []struct {
		name string
		edit func(r *ImageRecord)
	}{
		{"bad ID", func(r *ImageRecord) { r.ID = "sha256:../../x" }},
		{"bad manifest digest", func(r *ImageRecord) { r.Manifest.Digest = "md5:00" }},
		{"missing manifest", func(r *ImageRecord) { r.Manifest.Digest = missing }},
		{"missing target", func(r *ImageRecord) { r.Target.Digest = missing }},
		{"missing config", func(r *ImageRecord) { r.ID = missing }},
		{"digest reference as tag", func(r *ImageRecord) { r.RepoTags = []string{"a@" + missing.String()} }},
		{"tag as digest reference", func(r *ImageRecord) { r.RepoDigests = []string{"a:1"} }},
		{"bad reference", func(r *ImageRecord) { r.RepoTags = []string{"UPPER:1"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good
			r.RepoTags, r.RepoDigests = nil, nil
			tt.edit(&r)
			if err := s.Put(lease, r); err == nil {
				t.Fatalf("Put accepted %+v", r)
			}
			if s.Count() != 0 {
				t.Fatal("a refused Put recorded an image")
			}
		})
	}
}

// TestPutRefusesMissingLayer: every layer must be stored when Put commits.
func TestPutRefusesMissingLayer(t *testing.T) {
	s := newTestStore(t)
	lease := s.NewLease()
	rec := writeTestImage(t, lease, testImage{layers: []string{"x", "y"}})
	m, err := s.Meta(&rec)
	must(t, err)
	must(t, os.Remove(s.blobPath(m.Manifest.Layers[1].Digest)))
	if err := s.Put(lease, rec); err == nil {
		t.Fatal("Put recorded an image whose layer is missing")
	}
	lease.Release()
	if n := len(blobSet(t, s)); n != 0 || s.Count() != 0 {
		t.Fatalf("after a refused Put: %d blobs, %d images", n, s.Count())
	}
}

func TestConcurrentTagLookupDelete(t *testing.T) {
	s := newTestStore(t)
	id := putTagged(t, s, "base:1", "c").ID
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ref := fmt.Sprintf("docker.io/library/conc:t%d", i)
			for j := 0; j < 10; j++ {
				if _, err := s.Update(false, func(tx *Txn) error { return tx.PointRef(ref, id) }); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Lookup(ref); err != nil {
					t.Error(err)
					return
				}
				s.Snapshot()
				if _, err := s.Update(true, func(tx *Txn) error { tx.DropRef(ref); return nil }); err != nil {
					t.Error(err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	rec, err := s.Lookup("base:1")
	if err != nil || len(rec.RepoTags) != 1 {
		t.Fatalf("base: %+v %v", rec, err)
	}
	checkClean(t, s)
}

// TestIndexTargetKeepsItsChildren: an image whose target is an index keeps
// the index, its present platforms (manifest, config, layers) and the
// entries that are no platform's image alive; a platform of the index that
// is stored but not recorded (staged, never put) is not kept (issue 23:
// what is present is what the record says). Deleting the image collects
// them all, and a blob another image uses stays.
func TestIndexTargetKeepsItsChildren(t *testing.T) {
	s := newTestStore(t)
	lease := s.NewLease()
	amd := writeTestImage(t, lease, testImage{layers: []string{"amd", "shared"}})
	arm := writeTestImage(t, lease, testImage{layers: []string{"arm"}, platform: ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}})
	pa, pb := amd.Manifest, arm.Manifest
	pa.Platform = &ocispec.Platform{OS: "linux", Architecture: "amd64"}
	pb.Platform = &ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
	attBlob, err := writeJSON(lease, ocispec.MediaTypeImageManifest, ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: ocispec.DescriptorEmptyJSON})
	must(t, err)
	att := attBlob
	att.Annotations = map[string]string{"vnd.docker.reference.type": "attestation-manifest", "vnd.docker.reference.digest": pa.Digest.String()}
	att.Platform = &ocispec.Platform{OS: "unknown", Architecture: "unknown"}
	top := writeTestIndex(t, lease, pa, pb, att)
	// Only the amd64 image is recorded, against the index, as a pull does.
	rec := amd
	rec.Target = top
	rec.RepoTags = []string{"multi:1.0"}
	rec.RepoDigests = []string{"multi@" + top.Digest.String()}
	must(t, s.Put(lease, rec))
	other := putTestImage(t, s, testImage{tags: []string{"other:1"}, layers: []string{"shared"}})
	lease.Release()
	all := blobSet(t, s)
	for _, d := range []digest.Digest{top.Digest, pa.Digest, amd.ID, att.Digest} {
		if !all[d] {
			t.Fatalf("blob %s of the index collected while the image exists", d)
		}
	}
	for _, d := range []digest.Digest{pb.Digest, arm.ID} {
		if all[d] {
			t.Fatalf("blob %s of a platform not recorded survived the lease", d)
		}
	}
	got, err := s.Lookup("multi@" + top.Digest.String())
	if err != nil || got.ID != amd.ID || len(got.Platforms) != 1 || got.Platforms[0].Manifest.Digest != pa.Digest {
		t.Fatalf("lookup by index digest: %+v %v", got, err)
	}
	checkClean(t, s)
	deleteImage(t, s, "multi:1.0", true)
	left := blobSet(t, s)
	om, err := s.Meta(other)
	must(t, err)
	want := map[digest.Digest]bool{other.ID: true, other.Manifest.Digest: true, om.Manifest.Layers[0].Digest: true}
	if fmt.Sprint(sortedDigests(left)) != fmt.Sprint(sortedDigests(want)) {
		t.Fatalf("after delete: blobs %v, want %v", sortedDigests(left), sortedDigests(want))
	}
	checkClean(t, s)
}

func sortedDigests(m map[digest.Digest]bool) []string {
	var out []string
	for d := range m {
		out = append(out, d.String())
	}
	sort.Strings(out)
	return out
}

// TestPutRefusesIDNotNamedByManifest: a record's ID must be the config its
// manifest names, whether or not the manifest's metadata is cached already
// (the cache is per manifest digest).
func TestPutRefusesIDNotNamedByManifest(t *testing.T) {
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("warm cache=%v", warm), func(t *testing.T) {
			s := newTestStore(t)
			lease := s.NewLease()
			defer lease.Release()
			rec := writeTestImage(t, lease, testImage{layers: []string{"a"}})
			m, err := s.Meta(&rec)
			must(t, err)
			if !warm {
				s.metaMu.Lock()
				s.meta.Remove(rec.Manifest.Digest)
				s.metaMu.Unlock()
			}
			bad := rec
			bad.ID = m.Manifest.Layers[0].Digest // stored, but not the config
			bad.RepoTags = []string{"bad:1"}
			if err := s.Put(lease, bad); err == nil {
				t.Fatalf("Put recorded image %s over manifest %s, which names config %s", bad.ID, bad.Manifest.Digest, rec.ID)
			}
			if s.Count() != 0 {
				t.Fatal("an inconsistent record was stored")
			}
		})
	}
}

// TestPutReplacingTargetCollectsOldBlobs: recording an image again with
// another target (pulled as a multi-platform index, then loaded from a
// docker-save archive: same config, the manifest as target) must not leave
// the old index and the blobs only it kept alive as orphans; the change
// collects them as a delete does.
func TestPutReplacingTargetCollectsOldBlobs(t *testing.T) {
	s := newTestStore(t)
	lease := s.NewLease()
	amd := writeTestImage(t, lease, testImage{layers: []string{"amd"}})
	arm := writeTestImage(t, lease, testImage{layers: []string{"arm"}, platform: ocispec.Platform{OS: "linux", Architecture: "arm64"}})
	top := writeTestIndex(t, lease, amd.Manifest, arm.Manifest)
	rec := amd
	rec.Target = top
	rec.RepoTags = []string{"multi:1"}
	must(t, s.Put(lease, rec))
	lease.Release()
	checkClean(t, s)

	l2 := s.NewLease()
	again := writeTestImage(t, l2, testImage{layers: []string{"amd"}})
	again.RepoTags = []string{"multi:1"}
	must(t, s.Put(l2, again))
	l2.Release()
	if got, err := s.Lookup("multi:1"); err != nil || got.Target.Digest != amd.Manifest.Digest {
		t.Fatalf("multi:1 = %+v, %v", got, err)
	}
	rep, err := s.Check(context.Background(), true)
	must(t, err)
	if rep.UnreferencedBlobs != 0 || len(rep.Problems) != 0 {
		t.Fatalf("after a successful Put: %d unreferenced blobs (%d bytes): %s", rep.UnreferencedBlobs, rep.UnreferencedBytes, strings.Join(checkKinds(rep), "; "))
	}
}
