package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

func TestRecordsSurviveRestart(t *testing.T) {
	root := t.TempDir()
	s, _ := openLocalTestStore(t, root)
	ctx := context.Background()
	id := importTestImage(t, s, "persist:1", "p")
	if err := s.TagImage(ctx, "persist:1", "persist", "2"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, _ := openLocalTestStore(t, root)
	rec, err := s2.Lookup(ctx, "persist:2")
	if err != nil || rec.ID != id || len(rec.RepoTags) != 2 {
		t.Fatalf("after restart: %+v %v", rec, err)
	}
	if _, err := s2.Lookup(ctx, id.Encoded()[:8]); err != nil {
		t.Fatalf("short ID after restart: %v", err)
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
		if e.Name() != recordsFile && e.Name() != lockFile {
			t.Fatalf("stray file %s", e.Name())
		}
	}
}

func TestConcurrentTagLookupDelete(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	id := importTestImage(t, s, "base:1", "c")
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			tag := fmt.Sprintf("t%d", i)
			for j := 0; j < 10; j++ {
				if err := s.TagImage(ctx, id.String(), "conc", tag); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Lookup(ctx, "conc:"+tag); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Images(ctx, types.ImageListOptions{}); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.ImageDelete(ctx, "conc:"+tag, false, true); err != nil {
					t.Error(err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	rec, err := s.Lookup(ctx, "base:1")
	if err != nil || len(rec.RepoTags) != 1 {
		t.Fatalf("base: %+v %v", rec, err)
	}
}

// TestMultiPlatformTarget stores an index with two platform images and an
// attestation entry that is not stored, as a multi-platform pull leaves it.
func TestMultiPlatformTarget(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	var amd, arm imageConfig
	amd.OS, amd.Architecture = "linux", "amd64"
	arm.OS, arm.Architecture, arm.Variant = "linux", "arm64", "v8"
	ra := putCustomImage(t, s, amd, [][]byte{[]byte("amd layer")})
	rb := putCustomImage(t, s, arm, [][]byte{[]byte("arm layer")})
	pa, pb := ra.Manifest, rb.Manifest
	pa.Platform = &ocispec.Platform{OS: "linux", Architecture: "amd64"}
	pb.Platform = &ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
	att := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("att"), Size: 3,
		Platform:    &ocispec.Platform{OS: "unknown", Architecture: "unknown"},
		Annotations: map[string]string{"vnd.docker.reference.type": "attestation-manifest", "vnd.docker.reference.digest": pa.Digest.String()}}
	idx := ocispec.Index{Versioned: specsVersioned(), MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{pa, pb, att}}
	ib, _ := json.Marshal(idx)
	top := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(ib), Size: int64(len(ib))}
	if err := s.WriteBlob(ctx, top, bytes.NewReader(ib)); err != nil {
		t.Fatal(err)
	}
	// Only the amd64 image is recorded against the index (the pulled one);
	// the arm64 record goes away as after a single-platform pull.
	if _, err := s.ImageDelete(ctx, rb.ID.String(), false, false); err != nil {
		t.Fatal(err)
	}
	rec := ImageRecord{ID: ra.ID, Target: top, Manifest: ra.Manifest,
		RepoTags: []string{"multi:1.0"}, RepoDigests: []string{"multi@" + top.Digest.String()}}
	if err := s.PutImage(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, err := s.ImageInspect(ctx, "multi@"+top.Digest.String(), types.InspectOptions{Manifests: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Descriptor.Digest != top.Digest || got.Architecture != "amd64" || fmt.Sprint(got.RepoDigests) != "[multi@"+top.Digest.String()+"]" {
		t.Fatalf("inspect = %+v", got.InspectResponse)
	}
	if len(got.Manifests) != 3 {
		t.Fatalf("Manifests = %s", mustJSONText(t, got.Manifests))
	}
	kinds := []image.ManifestKind{got.Manifests[0].Kind, got.Manifests[1].Kind, got.Manifests[2].Kind}
	if fmt.Sprint(kinds) != "[image image attestation]" || !got.Manifests[0].Available || !got.Manifests[1].Available || got.Manifests[2].Available ||
		got.Manifests[2].AttestationData.For != pa.Digest {
		t.Fatalf("Manifests = %s", mustJSONText(t, got.Manifests))
	}
	arm64, err := s.ImageInspect(ctx, "multi:1.0", types.InspectOptions{Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"}})
	if err != nil || arm64.Architecture != "arm64" || arm64.ID != rb.ID.String() {
		t.Fatalf("platform arm64: %+v %v", arm64, err)
	}
	if _, err := s.ImageInspect(ctx, "multi:1.0", types.InspectOptions{Platform: &ocispec.Platform{OS: "windows", Architecture: "amd64"}}); err == nil {
		t.Fatal("windows platform matched")
	}
	// Save carries the platform manifest; load gives the same ID.
	var buf bytes.Buffer
	if err := s.ExportImage(ctx, []string{"multi:1.0"}, &buf); err != nil {
		t.Fatal(err)
	}
	s2, _ := newLocalTestStore(t)
	if err := s2.LoadImage(ctx, &buf, true, types.DiscardProgress); err != nil {
		t.Fatal(err)
	}
	if r2, err := s2.Lookup(ctx, "multi:1.0"); err != nil || r2.ID != ra.ID {
		t.Fatalf("loaded: %+v %v", r2, err)
	}
	// Deleting the image removes the index and the arm64 blobs it kept alive.
	if _, err := s.ImageDelete(ctx, "multi:1.0", false, true); err != nil {
		t.Fatal(err)
	}
	for _, d := range []digest.Digest{top.Digest, pa.Digest, pb.Digest, rb.ID} {
		if s.HasBlob(d) {
			t.Fatalf("blob %s survived", d)
		}
	}
}
