package registry

import (
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/wharfproject/wharf/imagespec"
)

func FuzzDecodeDocument(f *testing.F) {
	for _, s := range []string{
		`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"digest":"sha256:` + strings.Repeat("a", 64) + `","size":1},"layers":[]}`,
		`{"schemaVersion":2,"manifests":[{"digest":"sha256:` + strings.Repeat("b", 64) + `","size":1,"platform":{"os":"linux","architecture":"amd64"}}]}`,
		`{"schemaVersion":1,"fsLayers":[{"blobSum":"sha256:` + strings.Repeat("c", 64) + `"}],"history":[{"v1Compatibility":"{}"}],"signatures":[{"protected":"eyJmb3JtYXRMZW5ndGgiOjEwLCJmb3JtYXRUYWlsIjoiZlEifQ"}]}`,
		`{"manifests":[],"layers":[]}`,
		`null`,
		`[]`,
	} {
		f.Add(s, ocispec.MediaTypeImageManifest)
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, body, served string) {
		d, err := decodeDocument("fuzz", served, []byte(body))
		if err != nil {
			return
		}
		switch d.kind {
		case kindIndex:
			_, _ = imagespec.SelectManifest(&d.index, ocispec.Platform{OS: "linux", Architecture: "arm64"})
		case kindManifest:
			if d.manifest.Config.Digest.Validate() != nil {
				t.Errorf("accepted a manifest with an invalid config digest")
			}
		case kindSchema1:
			if len(d.v1Layers) == 0 {
				t.Errorf("accepted a schema1 manifest without layers")
			}
		default:
			t.Errorf("unknown kind %d", d.kind)
		}
		_ = imagespec.Sniff([]byte(body))
	})
}
