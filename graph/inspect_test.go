package graph

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
)

func TestBuildInspectOCIConfig(t *testing.T) {
	created := time.Date(2026, 12, 3, 7, 46, 9, 11963844, time.UTC)
	cfg := `{"created":"2026-12-03T07:46:09.011963844Z","author":"me","architecture":"arm64","variant":"v8","os":"linux",
	"config":{"User":"root","Env":["FOO=bar"],"Cmd":["/bin/sh"],"WorkingDir":"/root","ExposedPorts":{"8080/tcp":{}},
	"Labels":{"a":"b"},"Healthcheck":{"Test":["CMD","true"],"Interval":1000000000}},
	"rootfs":{"type":"layers","diff_ids":["sha256:c0879c3296f6551ad42a39ee1709110fa7f10959a78175ed66a95e7b40959d35"]},
	"history":[{"created":"2026-12-03T07:46:09Z","comment":"hi"}]}`
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("m"), Size: 400}
	out, err := BuildInspect(InspectSource{
		Config:      []byte(cfg),
		Descriptor:  &desc,
		Layers:      []ocispec.Descriptor{{Size: 100}, {Size: 23}},
		LastTagTime: created,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := out.InspectResponse
	if r.ID != digest.FromString(cfg).String() {
		t.Errorf("Id = %s", r.ID)
	}
	if r.Created != "2026-12-03T07:46:09.011963844Z" || r.Author != "me" || r.Architecture != "arm64" || r.Variant != "v8" || r.Os != "linux" {
		t.Errorf("platform/created fields: %+v", r)
	}
	if r.Size != 123 {
		t.Errorf("Size = %d, want 123 (sum of layers)", r.Size)
	}
	if r.Comment != "hi" {
		t.Errorf("Comment = %q (history fallback)", r.Comment)
	}
	if r.Config.User != "root" || r.Config.Labels["a"] != "b" || r.Config.Healthcheck == nil || r.Config.Healthcheck.Interval != time.Second {
		t.Errorf("Config = %+v", r.Config)
	}
	if r.RootFS.Type != "layers" || len(r.RootFS.Layers) != 1 {
		t.Errorf("RootFS = %+v", r.RootFS)
	}
	if r.Descriptor == nil || r.Descriptor.Digest != desc.Digest {
		t.Errorf("Descriptor = %v", r.Descriptor)
	}
	if !r.Metadata.LastTagTime.Equal(created) {
		t.Errorf("LastTagTime = %v", r.Metadata.LastTagTime)
	}
	js := graphtest.JSONText(t, out)
	if !strings.Contains(js, `"RepoTags":[]`) || !strings.Contains(js, `"RepoDigests":[]`) {
		t.Errorf("RepoTags/RepoDigests must be arrays: %s", js)
	}
	if strings.Contains(js, "Legacy") || strings.Contains(js, "DockerVersion") {
		t.Errorf("legacy fields leaked into JSON: %s", js)
	}
}

func TestBuildInspectV1Compatibility(t *testing.T) {
	v1 := `{"id":"3f2b","parent":"sha256:aaaa","comment":"old","created":"2015-01-01T00:00:00Z","container":"c0ffee",
	"container_config":{"Cmd":["/bin/sh","-c","#(nop) CMD"]},"docker_version":"1.6.0","config":{"Cmd":["sh"]},"architecture":"amd64","os":"linux"}`
	out, err := BuildInspect(InspectSource{ID: digest.FromString("x"), Config: []byte(v1)})
	if err != nil {
		t.Fatal(err)
	}
	l := out.Legacy
	if l.Parent != "sha256:aaaa" || l.DockerVersion != "1.6.0" || l.Container != "c0ffee" || l.ContainerConfig == nil || len(l.ContainerConfig.Cmd) != 3 {
		t.Errorf("Legacy = %+v", l)
	}
	if out.Comment != "old" || out.Config.Cmd[0] != "sh" || out.Created != "2015-01-01T00:00:00Z" {
		t.Errorf("fields = %+v", out.InspectResponse)
	}
	if out.RootFS.Type != "layers" {
		t.Errorf("RootFS.Type = %q", out.RootFS.Type)
	}
}

func TestBuildInspectRejectsGarbageConfig(t *testing.T) {
	if _, err := BuildInspect(InspectSource{Config: []byte("not json")}); err == nil {
		t.Fatal("garbage config accepted")
	}
}

func TestImageInspectLocal(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	id := graphtest.ImportImage(t, s, "127.0.0.1:5000/imported:1.0", "x", `CMD ["/bin/sh"]`, "ENV IMPORTED=1", "WORKDIR /root", `LABEL org.example.src=import`)
	got, err := s.ImageInspect(ctx, "127.0.0.1:5000/imported:1.0", types.InspectOptions{Manifests: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id.String() || len(got.RepoTags) != 1 || got.RepoTags[0] != "127.0.0.1:5000/imported:1.0" {
		t.Fatalf("Id/RepoTags = %s %v", got.ID, got.RepoTags)
	}
	if got.Comment != "test import" || got.Config.Env[0] != "IMPORTED=1" || got.Config.WorkingDir != "/root" || got.Config.Labels["org.example.src"] != "import" {
		t.Fatalf("config: %+v", got.Config)
	}
	if got.GraphDriver == nil || got.GraphDriver.Name != graphDriverName || got.GraphDriver.Data["Root"] != s.images.Root() {
		t.Fatalf("GraphDriver = %+v", got.GraphDriver)
	}
	if got.Metadata.LastTagTime.IsZero() {
		t.Fatal("LastTagTime not set on a tagged import")
	}
	if len(got.Manifests) != 1 || !got.Manifests[0].Available || got.Manifests[0].Kind != "image" ||
		got.Manifests[0].ImageData == nil || got.Manifests[0].ImageData.Platform.Architecture != "amd64" {
		t.Fatalf("Manifests = %s", graphtest.JSONText(t, got.Manifests))
	}
	if got.Size <= 0 || got.Descriptor == nil || got.Descriptor.MediaType != ocispec.MediaTypeImageManifest {
		t.Fatalf("Size/Descriptor = %d %v", got.Size, got.Descriptor)
	}
	if _, err := s.ImageInspect(ctx, id.String(), types.InspectOptions{Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"}}); err == nil {
		t.Fatal("arm64 platform matched an amd64 image")
	}
	if _, err := s.ImageInspect(ctx, id.String(), types.InspectOptions{Platform: &ocispec.Platform{OS: "linux", Architecture: "amd64"}}); err != nil {
		t.Fatalf("amd64: %v", err)
	}
	var back map[string]any
	json.Unmarshal([]byte(graphtest.JSONText(t, got)), &back)
	if _, ok := back["Manifests"]; !ok {
		t.Fatal("Manifests missing from JSON")
	}
}

// FuzzBuildInspect feeds config documents as a registry or an archive may
// serve them: BuildInspect must never panic, and a result must carry arrays.
func FuzzBuildInspect(f *testing.F) {
	for _, s := range []string{
		`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`,
		`{"id":"x","parent":"y","container_config":{"Cmd":["a"]},"docker_version":"1"}`,
		`{"created":"not a time"}`,
		`{"config":{"Healthcheck":{"Interval":-1}},"history":[{"empty_layer":true}]}`,
		`null`, `[]`, `{"rootfs":{"diff_ids":["sha256:zz"]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := BuildInspect(InspectSource{Config: b})
		if err != nil {
			return
		}
		if out.RepoTags == nil || out.RepoDigests == nil || out.Config == nil || out.RootFS.Type == "" {
			t.Fatalf("incomplete inspect for %q: %+v", b, out)
		}
	})
}
