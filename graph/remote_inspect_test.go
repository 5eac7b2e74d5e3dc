package graph

import (
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/wharfproject/wharf/imagespec"
)

func TestManifestSummaryKinds(t *testing.T) {
	img := ocispec.Descriptor{Digest: digest.FromString("a"), Size: 10, Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}
	att := ocispec.Descriptor{Digest: digest.FromString("b"), Size: 20, Platform: &ocispec.Platform{OS: "unknown", Architecture: "unknown"},
		Annotations: map[string]string{imagespec.AnnotationReferenceType: imagespec.AttestationManifestType, imagespec.AnnotationReferenceDigest: img.Digest.String()}}
	attNoPlatform := ocispec.Descriptor{Digest: digest.FromString("c"), Annotations: map[string]string{imagespec.AnnotationReferenceType: imagespec.AttestationManifestType}}

	s := manifestSummary(img)
	if s.Kind != "image" || s.Available || s.Size.Content != 10 || s.Size.Total != 10 || s.ImageData == nil || s.ImageData.Platform.Architecture != "arm64" || s.ImageData.Containers == nil {
		t.Fatalf("image summary %+v", s)
	}
	s = manifestSummary(att)
	if s.Kind != "attestation" || s.AttestationData == nil || s.AttestationData.For != img.Digest || s.ImageData != nil {
		t.Fatalf("attestation summary %+v", s)
	}
	if s := manifestSummary(attNoPlatform); s.Kind != "attestation" {
		t.Fatalf("annotation alone should mark an attestation: %+v", s)
	}
}
