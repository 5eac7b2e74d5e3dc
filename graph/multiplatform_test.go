package graph

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/image-spec/specs-go"

	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
)

// TestMultiPlatformTarget stores an index with two platform images and an
// attestation entry that is not stored, as a multi-platform pull leaves it.
func TestMultiPlatformTarget(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	var amd, arm store.ImageConfig
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
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{pa, pb, att}}
	ib, _ := json.Marshal(idx)
	top, lease := writeTestBlob(t, s, ocispec.MediaTypeImageIndex, ib)
	// One image of the index holding both platforms (as two pulls or a
	// load leave it); the arm64 record of its own goes away.
	if _, err := s.ImageDelete(ctx, rb.ID.String(), false, false); err != nil {
		t.Fatal(err)
	}
	rec := ImageRecord{ID: ra.ID, Target: top, Manifest: pa, Platforms: []store.PlatformImage{
		{Platform: *pa.Platform, Manifest: pa, Config: ra.ID}, {Platform: *pb.Platform, Manifest: pb, Config: rb.ID}},
		RepoTags: []string{"multi:1.0"}, RepoDigests: []string{"multi@" + top.Digest.String()}}
	if err := s.images.Put(lease, rec); err != nil {
		t.Fatal(err)
	}
	lease.Release()
	got, err := s.ImageInspect(ctx, "multi@"+top.Digest.String(), types.InspectOptions{Manifests: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Descriptor.Digest != top.Digest || got.Architecture != "amd64" || fmt.Sprint(got.RepoDigests) != "[multi@"+top.Digest.String()+"]" {
		t.Fatalf("inspect = %+v", got.InspectResponse)
	}
	if len(got.Manifests) != 3 {
		t.Fatalf("Manifests = %s", graphtest.JSONText(t, got.Manifests))
	}
	kinds := []image.ManifestKind{got.Manifests[0].Kind, got.Manifests[1].Kind, got.Manifests[2].Kind}
	if fmt.Sprint(kinds) != "[image image attestation]" || !got.Manifests[0].Available || !got.Manifests[1].Available || got.Manifests[2].Available ||
		got.Manifests[2].AttestationData.For != pa.Digest {
		t.Fatalf("Manifests = %s", graphtest.JSONText(t, got.Manifests))
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
	if err := s.ExportImage(ctx, []string{"multi:1.0"}, nil, &buf); err != nil {
		t.Fatal(err)
	}
	s2, _ := newLocalTestStore(t)
	if err := s2.LoadImage(ctx, &buf, true, nil, types.DiscardProgress); err != nil {
		t.Fatal(err)
	}
	if r2, err := s2.images.Lookup("multi:1.0"); err != nil || r2.ID != ra.ID {
		t.Fatalf("loaded: %+v %v", r2, err)
	}
	// Deleting the image removes the index and the arm64 blobs it kept alive.
	if _, err := s.ImageDelete(ctx, "multi:1.0", false, true); err != nil {
		t.Fatal(err)
	}
	for _, d := range []digest.Digest{top.Digest, pa.Digest, pb.Digest, rb.ID} {
		if s.images.HasBlob(d) {
			t.Fatalf("blob %s survived", d)
		}
	}
	if rep, err := s.Check(ctx, true); err != nil || len(rep.Problems) != 0 || rep.Blobs != 0 {
		t.Fatalf("check after delete: %+v %v", rep, err)
	}
}

// TestMultiPlatformInspectAfterRestart: inspect and history of another
// platform of an index-targeted image work from the blobs alone, not only
// while that platform's manifest happens to be in the metadata cache (a
// restarted daemon has an empty cache).
func TestMultiPlatformInspectAfterRestart(t *testing.T) {
	root := t.TempDir()
	s, _ := openTestStore(t, Options{Root: root})
	ctx := context.Background()
	var amd, arm store.ImageConfig
	amd.OS, amd.Architecture = "linux", "amd64"
	arm.OS, arm.Architecture = "linux", "arm64"
	arm.History = []ocispec.History{{CreatedBy: "arm layer"}}
	ra := putCustomImage(t, s, amd, [][]byte{[]byte("amd layer")})
	rb := putCustomImage(t, s, arm, [][]byte{[]byte("arm layer")})
	pa, pb := ra.Manifest, rb.Manifest
	pa.Platform = &ocispec.Platform{OS: "linux", Architecture: "amd64"}
	pb.Platform = &ocispec.Platform{OS: "linux", Architecture: "arm64"}
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{pa, pb}}
	ib, _ := json.Marshal(idx)
	top, lease := writeTestBlob(t, s, ocispec.MediaTypeImageIndex, ib)
	if _, err := s.ImageDelete(ctx, rb.ID.String(), false, false); err != nil {
		t.Fatal(err)
	}
	if err := s.images.Put(lease, ImageRecord{ID: ra.ID, Target: top, Manifest: pa, RepoTags: []string{"multi:1.0"}, Platforms: []store.PlatformImage{
		{Platform: *pa.Platform, Manifest: pa, Config: ra.ID}, {Platform: *pb.Platform, Manifest: pb, Config: rb.ID}}}); err != nil {
		t.Fatal(err)
	}
	lease.Release()
	s.Close()

	s2, _ := openTestStore(t, Options{Root: root})
	armP := &ocispec.Platform{OS: "linux", Architecture: "arm64"}
	got, err := s2.ImageInspect(ctx, "multi:1.0", types.InspectOptions{Platform: armP})
	if err != nil || got.Architecture != "arm64" || got.ID != rb.ID.String() {
		t.Fatalf("inspect --platform linux/arm64 after restart: %+v %v", got, err)
	}
	h, err := s2.ImageHistory(ctx, "multi:1.0", armP)
	if err != nil || len(h) != 1 || h[0].CreatedBy != "arm layer" {
		t.Fatalf("history --platform linux/arm64 after restart: %+v %v", h, err)
	}
}

// TestPlatformNotPresentChangesNothing: rmi, save and push checks of a
// platform the image does not hold are NotFound in dockerd's words, and
// the image is untouched.
func TestPlatformNotPresentChangesNothing(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	var amd store.ImageConfig
	amd.OS, amd.Architecture = "linux", "amd64"
	ra := putCustomImage(t, s, amd, [][]byte{[]byte("amd layer")})
	if err := tagAs(ctx, s, ra.ID.String(), "single", "1"); err != nil {
		t.Fatal(err)
	}
	s390 := ocispec.Platform{OS: "linux", Architecture: "s390x"}
	if _, err := s.ImageDeletePlatforms(ctx, "single:1", []ocispec.Platform{s390}, false, true); !errdefs.IsNotFound(err) ||
		!strings.Contains(err.Error(), "does not provide the specified platform (linux/s390x)") {
		t.Fatalf("rmi --platform linux/s390x: %v", err)
	}
	if err := s.ExportImage(ctx, []string{"single:1"}, []ocispec.Platform{s390}, io.Discard); !errdefs.IsNotFound(err) {
		t.Fatalf("save --platform linux/s390x: %v", err)
	}
	if err := s.CheckPlatform(ctx, "single:1", s390); !errdefs.IsNotFound(err) {
		t.Fatalf("CheckPlatform linux/s390x: %v", err)
	}
	if err := s.CheckPlatform(ctx, "single:1", ocispec.Platform{OS: "linux", Architecture: "amd64"}); err != nil {
		t.Fatalf("CheckPlatform linux/amd64: %v", err)
	}
	if got, err := s.images.Lookup("single:1"); err != nil || got.ID != ra.ID || !s.images.HasBlob(ra.ID) {
		t.Fatalf("image changed: %+v %v", got, err)
	}
	// rmi --platform of its only platform removes the image, as rmi does.
	resp, err := s.ImageDeletePlatforms(ctx, "single:1", []ocispec.Platform{{OS: "linux", Architecture: "amd64"}}, false, true)
	if err != nil || len(resp) == 0 || resp[len(resp)-1].Deleted != ra.ID.String() {
		t.Fatalf("rmi --platform of the last platform: %+v %v", resp, err)
	}
	if _, err := s.images.Lookup("single:1"); !errdefs.IsNotFound(err) {
		t.Fatalf("image survived: %v", err)
	}
}

// TestLoadPartialIndexArchive: an archive whose index names two platforms
// but holds one whole (Engine 29's save of an image with one platform
// present) loads that one; a platform asked for that the archive does not
// hold whole is refused.
func TestLoadPartialIndexArchive(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	var amd, arm store.ImageConfig
	amd.OS, amd.Architecture = "linux", "amd64"
	arm.OS, arm.Architecture = "linux", "arm64"
	ra := putCustomImage(t, s, amd, [][]byte{[]byte("amd layer")})
	rb := putCustomImage(t, s, arm, [][]byte{[]byte("arm layer")})
	pa, pb := ra.Manifest, rb.Manifest
	pa.Platform = &ocispec.Platform{OS: "linux", Architecture: "amd64"}
	pb.Platform = &ocispec.Platform{OS: "linux", Architecture: "arm64"}
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{pa, pb}}
	ib, _ := json.Marshal(idx)
	top, lease := writeTestBlob(t, s, ocispec.MediaTypeImageIndex, ib)
	if _, err := s.ImageDelete(ctx, rb.ID.String(), false, false); err != nil {
		t.Fatal(err)
	}
	if err := s.images.Put(lease, ImageRecord{ID: ra.ID, Target: top, Manifest: pa, RepoTags: []string{"multi:1.0"}, Platforms: []store.PlatformImage{
		{Platform: *pa.Platform, Manifest: pa, Config: ra.ID}, {Platform: *pb.Platform, Manifest: pb, Config: rb.ID}}}); err != nil {
		t.Fatal(err)
	}
	lease.Release()
	var buf bytes.Buffer
	if err := s.ExportImage(ctx, []string{"multi:1.0"}, nil, &buf); err != nil {
		t.Fatal(err)
	}
	// Drop the arm64 config from the archive.
	partial := dropTarEntry(t, buf.Bytes(), "blobs/sha256/"+rb.ID.Encoded())
	s2, _ := newLocalTestStore(t)
	if err := s2.LoadImage(ctx, bytes.NewReader(partial), true, []ocispec.Platform{{OS: "linux", Architecture: "arm64"}}, types.DiscardProgress); err == nil {
		t.Fatal("load --platform linux/arm64 of an archive without its config succeeded")
	}
	if err := s2.LoadImage(ctx, bytes.NewReader(partial), true, nil, types.DiscardProgress); err != nil {
		t.Fatal(err)
	}
	got, err := s2.images.Lookup("multi:1.0")
	if err != nil || got.ID != ra.ID || len(got.Present()) != 1 || got.Target.Digest != top.Digest {
		t.Fatalf("loaded: %+v %v", got, err)
	}
	if rep, err := s2.Check(ctx, false); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

// dropTarEntry is the tar b without the entry name.
func dropTarEntry(t *testing.T, b []byte, name string) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
