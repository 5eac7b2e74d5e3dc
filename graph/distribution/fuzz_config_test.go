package distribution

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/imagespec"
)

// FuzzPulledConfig checks a pulled config against its manifest, as a pull
// does before it writes anything. The manifest has up to 8 layers; a bit of
// uncompressed makes layer i an uncompressed tar, and a bit of fromConfig
// gives it the config's i-th diff ID as its digest (the only way an
// uncompressed layer can pass). Accepted exactly when the config parses,
// lists one diff ID per layer, and every uncompressed layer's digest is its
// diff ID; an accepted config's diff IDs survive a JSON round trip. A
// refusal names the registry and the config.
func FuzzPulledConfig(f *testing.F) {
	d1, d2 := digest.FromString("one"), digest.FromString("two")
	f.Add([]byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["`+d1.String()+`"]}}`), uint8(1), uint8(0), uint8(0))
	f.Add([]byte(`{"rootfs":{"type":"layers","diff_ids":["`+d1.String()+`","`+d2.String()+`"]}}`), uint8(2), uint8(3), uint8(3))
	f.Add([]byte(`{"rootfs":{"type":"layers","diff_ids":["`+d1.String()+`","`+d2.String()+`"]}}`), uint8(2), uint8(2), uint8(1))
	f.Add([]byte(`{"rootfs":{"type":"layers","diff_ids":[]}}`), uint8(1), uint8(0), uint8(0))
	f.Add([]byte(`{"rootfs":{"diff_ids":"not a list"}}`), uint8(0), uint8(0), uint8(0))
	f.Add([]byte(`{"rootfs":{"diff_ids":["sha256:short"]}}`), uint8(1), uint8(1), uint8(1))
	f.Add([]byte(`null`), uint8(0), uint8(0), uint8(0))
	f.Add([]byte(`{`), uint8(0), uint8(0), uint8(0))
	const host = "registry.test:5000"
	f.Fuzz(func(t *testing.T, config []byte, layers, uncompressed, fromConfig uint8) {
		layers %= 9
		parsed, parseErr := store.ParseImageConfig(config)
		var ids []digest.Digest
		if parseErr == nil {
			ids = parsed.RootFS.DiffIDs
		}
		man := ocispec.Manifest{Config: ocispec.Descriptor{MediaType: imagespec.MediaTypeDockerConfig, Digest: digest.FromBytes(config), Size: int64(len(config))}}
		for i := 0; i < int(layers); i++ {
			ld := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromString(strings.Repeat("x", i+1)), Size: 1}
			if uncompressed&(1<<i) != 0 {
				ld.MediaType = ocispec.MediaTypeImageLayer
			}
			if fromConfig&(1<<i) != 0 && i < len(ids) {
				ld.Digest = ids[i]
			}
			man.Layers = append(man.Layers, ld)
		}

		err := checkDiffIDs(host, man, config)

		valid := parseErr == nil && len(ids) == len(man.Layers)
		for i, ld := range man.Layers {
			if valid && imagespec.IsUncompressedLayer(ld.MediaType) && ld.Digest != ids[i] {
				valid = false
			}
		}
		if err != nil {
			if valid {
				t.Fatalf("refused a config that describes its %d layers: %v", layers, err)
			}
			if !strings.Contains(err.Error(), host) || !strings.Contains(err.Error(), man.Config.Digest.String()) {
				t.Fatalf("the refusal names neither the registry %s nor the config %s: %v", host, man.Config.Digest, err)
			}
			return
		}
		if !valid {
			t.Fatalf("accepted a config that does not describe its %d layers (parse error %v, %d diff IDs)", layers, parseErr, len(ids))
		}
		b, err := json.Marshal(parsed)
		if err != nil {
			t.Fatalf("an accepted config does not marshal: %v", err)
		}
		again, err := store.ParseImageConfig(b)
		if err != nil {
			t.Fatalf("an accepted config, marshalled, does not parse: %v\n%s", err, b)
		}
		if len(again.RootFS.DiffIDs) != len(ids) {
			t.Fatalf("diff IDs %v became %v in a round trip", ids, again.RootFS.DiffIDs)
		}
		for i := range ids {
			if again.RootFS.DiffIDs[i] != ids[i] {
				t.Fatalf("diff IDs %v became %v in a round trip", ids, again.RootFS.DiffIDs)
			}
		}
	})
}
