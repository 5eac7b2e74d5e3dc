package distribution

import (
	"slices"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/imagespec"
)

func TestReferrerSubjects(t *testing.T) {
	m := func(s string) planManifest {
		return planManifest{desc: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString(s)}}
	}
	index, amd, arm, att := m("index"), m("amd64"), m("arm64"), m("attestation")
	attDesc := att.desc
	attDesc.Annotations = map[string]string{imagespec.AnnotationReferenceType: imagespec.AttestationManifestType, imagespec.AnnotationReferenceDigest: amd.desc.Digest.String()}
	idx := &ocispec.Index{Manifests: []ocispec.Descriptor{amd.desc, arm.desc, attDesc}}
	for _, tc := range []struct {
		name      string
		top       planManifest
		manifests []planManifest
		idx       *ocispec.Index
		want      []digest.Digest
	}{
		{"one manifest", amd, []planManifest{amd}, nil, []digest.Digest{amd.desc.Digest}},
		{"whole index: its platforms, not its attestation", index, []planManifest{index, amd, arm, att}, idx, []digest.Digest{index.desc.Digest, amd.desc.Digest, arm.desc.Digest}},
		{"one platform of an index", arm, []planManifest{arm}, idx, []digest.Digest{arm.desc.Digest}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := referrerSubjects(tc.top, tc.manifests, tc.idx); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
