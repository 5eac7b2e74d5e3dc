package imagespec

import (
	"encoding/base64"
	"fmt"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestSniff(t *testing.T) {
	tests := []struct{ doc, want string }{
		{`{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json"}`, "application/vnd.docker.distribution.manifest.v2+json"},
		{`{"schemaVersion":2,"manifests":[]}`, ocispec.MediaTypeImageIndex},
		{`{"schemaVersion":2,"config":{},"layers":[]}`, ocispec.MediaTypeImageManifest},
		{`{"schemaVersion":1,"fsLayers":[]}`, "application/vnd.docker.distribution.manifest.v1+json"},
		{`not json`, ""},
	}
	for _, tc := range tests {
		if got := Sniff([]byte(tc.doc)); got != tc.want {
			t.Errorf("Sniff(%s) = %q, want %q", tc.doc, got, tc.want)
		}
	}
}

// signedSchema1 wraps payload (a schema1 manifest) in a JWS as docker's
// libtrust does: the payload up to its last brace, the signatures, and a
// protected header that says how to cut the payload back out.
func signedSchema1(payload string) []byte {
	n := len(payload) - 1
	prot := fmt.Sprintf(`{"formatLength":%d,"formatTail":%q}`, n, base64.RawURLEncoding.EncodeToString([]byte(payload[n:])))
	return []byte(payload[:n] + `,"signatures":[{"header":{"alg":"ES256"},"signature":"x","protected":"` + base64.RawURLEncoding.EncodeToString([]byte(prot)) + `"}]}`)
}

func TestSniffSchema1AndNull(t *testing.T) {
	payload := `{"schemaVersion":1,"name":"a","tag":"t","fsLayers":[],"history":[]}`
	tests := []struct {
		doc  []byte
		want string
	}{
		{[]byte(payload), MediaTypeDockerSchema1},
		{signedSchema1(payload), MediaTypeDockerSchema1JWS},
		// Signatures whose payload is not schema1 do not make a signed schema1.
		{signedSchema1(`{"schemaVersion":1,"fsLayers":[],"x":{"schemaVersion":2}}`), MediaTypeDockerSchema1JWS},
		{[]byte(`{"schemaVersion":1,"fsLayers":[],"signatures":[{"protected":"!!"}]}`), MediaTypeDockerSchema1},
		{[]byte(`{"schemaVersion":2,"manifests":null}`), ocispec.MediaTypeImageManifest},
		{[]byte(`{"schemaVersion":2,"manifests":null,"fsLayers":null}`), ocispec.MediaTypeImageManifest},
	}
	for _, tc := range tests {
		if got := Sniff(tc.doc); got != tc.want {
			t.Errorf("Sniff(%s) = %q, want %q", tc.doc, got, tc.want)
		}
	}
}

func TestSchema1Payload(t *testing.T) {
	payload := `{"schemaVersion":1,"name":"a","tag":"t","fsLayers":[],"history":[]}`
	if got, ok := Schema1Payload(signedSchema1(payload)); !ok || string(got) != payload {
		t.Errorf("Schema1Payload = %q %v, want the payload", got, ok)
	}
	for _, b := range [][]byte{
		[]byte(payload), // not signed
		signedSchema1(`{"schemaVersion":2,"config":{},"layers":[]}`), // signed, but not schema1
		[]byte(`{"signatures":[{"protected":"!!"}]}`),
		[]byte(`{"signatures":[{"protected":"eyJmb3JtYXRMZW5ndGgiOjk5OTksImZvcm1hdFRhaWwiOiJmUSJ9"}]}`), // formatLength past the end
		[]byte(`not json`),
	} {
		if p, ok := Schema1Payload(b); ok {
			t.Errorf("Schema1Payload(%s) = %q, want none", b, p)
		}
	}
}

func TestMediaTypePredicates(t *testing.T) {
	tests := []struct {
		mt                                   string
		index, manifest, schema1, known, tar bool
	}{
		{ocispec.MediaTypeImageIndex, true, false, false, true, false},
		{MediaTypeDockerManifestList, true, false, false, true, false},
		{ocispec.MediaTypeImageManifest, false, true, false, true, false},
		{MediaTypeDockerManifest, false, true, false, true, false},
		{MediaTypeDockerSchema1, false, false, true, true, false},
		{MediaTypeDockerSchema1JWS, false, false, true, true, false},
		{MediaTypeDockerConfig, false, false, false, false, false},
		{MediaTypeDockerLayerGzip, false, false, false, false, true},
		{ocispec.MediaTypeImageLayer, false, false, false, false, true},
		{"", false, false, false, false, false},
		{"application/json", false, false, false, false, false},
	}
	for _, tc := range tests {
		if IsIndex(tc.mt) != tc.index || IsManifest(tc.mt) != tc.manifest || IsSchema1(tc.mt) != tc.schema1 || IsKnownManifest(tc.mt) != tc.known || IsTarLayer(tc.mt) != tc.tar {
			t.Errorf("%q: index %v manifest %v schema1 %v known %v tar %v", tc.mt, IsIndex(tc.mt), IsManifest(tc.mt), IsSchema1(tc.mt), IsKnownManifest(tc.mt), IsTarLayer(tc.mt))
		}
	}
	if len(ManifestMediaTypes) != 6 || !IsIndex(ManifestMediaTypes[0]) || !IsSchema1(ManifestMediaTypes[5]) {
		t.Errorf("ManifestMediaTypes = %v: every known type, indexes first, schema1 last", ManifestMediaTypes)
	}
	for _, mt := range ManifestMediaTypes {
		if !IsKnownManifest(mt) {
			t.Errorf("ManifestMediaTypes has %q, which IsKnownManifest refuses", mt)
		}
	}
}

func TestIsAttestation(t *testing.T) {
	tests := []struct {
		d    ocispec.Descriptor
		want bool
	}{
		{ocispec.Descriptor{Annotations: map[string]string{AnnotationReferenceType: AttestationManifestType}}, true},
		{ocispec.Descriptor{Platform: &ocispec.Platform{OS: "linux", Architecture: "amd64"}, Annotations: map[string]string{AnnotationReferenceType: AttestationManifestType}}, true},
		{ocispec.Descriptor{Platform: &ocispec.Platform{OS: "unknown", Architecture: "unknown"}}, true},
		{ocispec.Descriptor{Platform: &ocispec.Platform{OS: "linux", Architecture: "amd64"}}, false},
		{ocispec.Descriptor{Platform: &ocispec.Platform{OS: "unknown", Architecture: "amd64"}}, false},
		{ocispec.Descriptor{Annotations: map[string]string{AnnotationReferenceType: "other"}}, false},
		{ocispec.Descriptor{}, false},
	}
	for i, tc := range tests {
		if got := IsAttestation(tc.d); got != tc.want {
			t.Errorf("%d: IsAttestation(%+v) = %v, want %v", i, tc.d, got, tc.want)
		}
	}
}
