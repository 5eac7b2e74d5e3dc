package imagespec

import (
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
