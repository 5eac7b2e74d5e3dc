package registry

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Hot-path benchmarks for bench/ (issue 5): each BenchmarkHotX has a
// BenchmarkHotXFloor doing the least work the same answer needs, so the
// ratio of the two is what wharf adds.

func benchService(b *testing.B) *Service {
	b.Helper()
	s, err := newService(ServiceOptions{}, 50*time.Millisecond)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

const benchRef = "registry.example.com:5000/team/app:1.4"

func BenchmarkHotParseReference(b *testing.B) {
	s := benchService(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := candidatesOf(s, benchRef); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHotParseReferenceFloor(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reference.ParseNormalizedNamed(benchRef); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHotParseShortName(b *testing.B) {
	s := benchService(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := candidatesOf(s, "busybox"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHotParseShortNameFloor(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reference.ParseNormalizedNamed("busybox"); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDigest(s string) digest.Digest { return digest.FromString(s) }

// benchManifest is an OCI manifest with 8 layers and annotations, the size
// of a typical application image's (~2 KiB).
func benchManifest(b *testing.B) []byte {
	m := ocispec.Manifest{
		MediaType:   ocispec.MediaTypeImageManifest,
		Config:      ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: benchDigest("config"), Size: 7023},
		Annotations: map[string]string{"org.opencontainers.image.created": "2025-03-14T15:09:26Z", "org.opencontainers.image.source": "https://example.com/app"},
	}
	m.SchemaVersion = 2
	for i := 0; i < 8; i++ {
		m.Layers = append(m.Layers, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: benchDigest(fmt.Sprint("layer", i)), Size: int64(1000000 * (i + 1))})
	}
	out, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// benchIndex is an OCI index of 4 platforms plus their 4 attestations.
func benchIndex(b *testing.B) []byte {
	ix := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex}
	ix.SchemaVersion = 2
	for i, p := range []ocispec.Platform{
		{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"},
		{OS: "linux", Architecture: "arm", Variant: "v7"}, {OS: "linux", Architecture: "s390x"},
	} {
		d := benchDigest(fmt.Sprint("m", i))
		ix.Manifests = append(ix.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: d, Size: 1234, Platform: &p})
		ix.Manifests = append(ix.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: benchDigest(fmt.Sprint("a", i)), Size: 566,
			Platform:    &ocispec.Platform{OS: "unknown", Architecture: "unknown"},
			Annotations: map[string]string{"vnd.docker.reference.type": "attestation-manifest", "vnd.docker.reference.digest": d.String()}})
	}
	out, err := json.Marshal(ix)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

func BenchmarkHotDecodeManifest(b *testing.B) {
	body := benchManifest(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := decodeDocument("registry.example.com", ocispec.MediaTypeImageManifest, body)
		if err != nil || len(d.manifest.Layers) != 8 {
			b.Fatal(err)
		}
	}
}

func BenchmarkHotDecodeManifestFloor(b *testing.B) {
	body := benchManifest(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var m ocispec.Manifest
		if err := json.Unmarshal(body, &m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHotDecodeIndex(b *testing.B) {
	body := benchIndex(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := decodeDocument("registry.example.com", ocispec.MediaTypeImageIndex, body)
		if err != nil || len(d.index.Manifests) != 8 {
			b.Fatal(err)
		}
	}
}

func BenchmarkHotDecodeIndexFloor(b *testing.B) {
	body := benchIndex(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var ix ocispec.Index
		if err := json.Unmarshal(body, &ix); err != nil {
			b.Fatal(err)
		}
	}
}
