package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
)

// Hot-path benchmarks for bench/ (issue 5): each BenchmarkHotX has a
// BenchmarkHotXFloor doing the least work the same answer needs.

// benchConfig is an image config the size of a typical application image's:
// 12 layers, 14 history entries, a dozen env vars and labels (~5 KiB).
func benchConfig(b *testing.B) []byte {
	created := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	cfg := ocispec.Image{
		Created:  &created,
		Author:   "bench",
		Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"},
		Config: ocispec.ImageConfig{
			User: "app", WorkingDir: "/srv", Entrypoint: []string{"/entrypoint.sh"}, Cmd: []string{"serve", "--port", "8080"},
			ExposedPorts: map[string]struct{}{"8080/tcp": {}}, Volumes: map[string]struct{}{"/data": {}},
			Labels: map[string]string{}, StopSignal: "SIGTERM",
		},
		RootFS: ocispec.RootFS{Type: "layers"},
	}
	for i := 0; i < 12; i++ {
		cfg.Config.Env = append(cfg.Config.Env, fmt.Sprintf("VAR_%d=%s", i, strings.Repeat("v", 20)))
		cfg.Config.Labels[fmt.Sprintf("org.example.label-%d", i)] = strings.Repeat("l", 30)
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, digest.FromString(fmt.Sprint("layer", i)))
	}
	for i := 0; i < 14; i++ {
		cfg.History = append(cfg.History, ocispec.History{Created: &created, CreatedBy: fmt.Sprintf("RUN step %d && %s", i, strings.Repeat("x", 60)), EmptyLayer: i >= 12})
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

func benchSource(b *testing.B) InspectSource {
	raw := benchConfig(b)
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromString("index"), Size: 1609}
	src := InspectSource{
		ID: digest.FromBytes(raw), Config: raw, Descriptor: &desc,
		RepoTags:    []string{"registry.example.com:5000/team/app:1.4"},
		RepoDigests: []string{"registry.example.com:5000/team/app@" + desc.Digest.String()},
	}
	for i := 0; i < 12; i++ {
		src.Layers = append(src.Layers, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromString(fmt.Sprint("gz", i)), Size: 1 << 20})
	}
	return src
}

func BenchmarkHotBuildInspect(b *testing.B) {
	src := benchSource(b)
	b.ReportAllocs()
	for b.Loop() {
		out, err := BuildInspect(src)
		if err != nil || len(out.RootFS.Layers) != 12 {
			b.Fatal(err)
		}
	}
}

// The floor: decoding the config is the least an inspect must do.
func BenchmarkHotBuildInspectFloor(b *testing.B) {
	src := benchSource(b)
	b.ReportAllocs()
	for b.Loop() {
		var img ocispec.Image
		if err := json.Unmarshal(src.Config, &img); err != nil {
			b.Fatal(err)
		}
	}
}

// BuildInspect as a warm remote inspect runs it (issue 14): the config's
// fields from the inspect cache, the request's own fields added. Its floor
// is BuildInspect's: decoding the config, which a cache hit skips.
func BenchmarkHotBuildInspectCached(b *testing.B) {
	src := benchSource(b)
	c := newInspectCache(inspectCacheEntries)
	key := digest.FromBytes(src.Config)
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.buildInspect(src, key)
		if err != nil || len(out.RootFS.Layers) != 12 {
			b.Fatal(err)
		}
	}
}

func BenchmarkHotBuildInspectCachedFloor(b *testing.B) { BenchmarkHotBuildInspectFloor(b) }

// benchStore5000 is a store with one real image (bench:1) and 5,000
// index-only records, as BenchmarkLookupShortID builds them.
func benchStore5000(b *testing.B) *Service {
	recs := make([]*ImageRecord, 0, 5000)
	for i := 0; i < 5000; i++ {
		d := digest.FromString(fmt.Sprint("img", i))
		recs = append(recs, &ImageRecord{ID: d, RepoTags: []string{fmt.Sprintf("docker.io/library/img-%d:latest", i)}, RepoDigests: []string{}})
	}
	s := openSeededStore(b, recs)
	graphtest.ImportImage(b, s, "bench:1", "bench")
	return s
}

// Local inspect by name with 5,000 images: lookup, cached manifest and
// config, BuildInspect and the platform summaries.
func BenchmarkHotInspectLocal5000(b *testing.B) {
	s := benchStore5000(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.ImageInspect(ctx, "bench:1", types.InspectOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// The floor: resolving the name alone.
func BenchmarkHotInspectLocal5000Floor(b *testing.B) {
	s := benchStore5000(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.images.Lookup("bench:1"); err != nil {
			b.Fatal(err)
		}
	}
}
