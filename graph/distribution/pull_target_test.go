package distribution

import (
	"errors"
	"testing"

	"github.com/wharfproject/wharf/registry"
)

const okManifest = `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",
"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000001","size":7},
"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000002","size":100}]}`

func TestPullManifest(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		ok        bool
	}{
		{"a manifest", okManifest, true},
		{"not JSON", `{`, false},
		{"no config", `{"schemaVersion":2,"layers":[]}`, false},
		{"a bad digest", `{"config":{"digest":"sha256:zz","size":1}}`, false},
		{"a negative size", `{"config":{"digest":"sha256:0000000000000000000000000000000000000000000000000000000000000001","size":-1}}`, false},
		{"a layer's negative size", `{"config":{"digest":"sha256:0000000000000000000000000000000000000000000000000000000000000001","size":1},"layers":[{"digest":"sha256:0000000000000000000000000000000000000000000000000000000000000002","size":-5}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := pullManifest([]byte(tc.raw))
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, registry.ErrUpstream) {
				t.Errorf("%v is not ErrUpstream", err)
			}
			if tc.ok && (len(m.Layers) != 1 || m.Layers[0].Size != 100 || m.Config.Size != 7) {
				t.Errorf("%+v", m)
			}
		})
	}
}

// FuzzPullManifest: whatever a registry serves as a manifest, the parse
// never panics, and what it accepts has valid digests and sizes ≥ 0.
func FuzzPullManifest(f *testing.F) {
	f.Add([]byte(okManifest))
	f.Add([]byte(`{"config":{"digest":"sha256:zz","size":-1},"layers":[null]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := pullManifest(raw)
		if err != nil {
			return
		}
		if m.Config.Digest.Validate() != nil || m.Config.Size < 0 {
			t.Fatalf("accepted config %+v", m.Config)
		}
		for _, l := range m.Layers {
			if l.Digest.Validate() != nil || l.Size < 0 {
				t.Fatalf("accepted layer %+v", l)
			}
		}
	})
}
