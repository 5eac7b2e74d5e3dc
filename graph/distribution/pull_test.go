package distribution

import (
	"errors"
	"net/http"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry"
)

// A config that contradicts its manifest is the registry's fault: a bad
// gateway (registry.ErrUpstream, 502), as docs/architecture.md promises, not
// a 500.
func TestCheckDiffIDsContradictionIsUpstream(t *testing.T) {
	tarLayer := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromString("layer")}
	man := ocispec.Manifest{Config: ocispec.Descriptor{Digest: digest.FromString("config")}, Layers: []ocispec.Descriptor{tarLayer}}
	for name, config := range map[string]string{
		"count":            `{"rootfs":{"type":"layers","diff_ids":[]}}`,
		"uncompressed tar": `{"rootfs":{"type":"layers","diff_ids":["` + digest.FromString("other").String() + `"]}}`,
		"not json":         `{not json`,
	} {
		err := checkDiffIDs("registry.invalid", man, []byte(config))
		if !errors.Is(err, registry.ErrUpstream) {
			t.Errorf("%s: %v is not registry.ErrUpstream", name, err)
			continue
		}
		var se interface{ HTTPStatus() int }
		if !errors.As(err, &se) || se.HTTPStatus() != http.StatusBadGateway {
			t.Errorf("%s: %v does not say 502", name, err)
		}
	}
	ok := `{"rootfs":{"type":"layers","diff_ids":["` + tarLayer.Digest.String() + `"]}}`
	if err := checkDiffIDs("registry.invalid", man, []byte(ok)); err != nil {
		t.Errorf("a config that agrees: %v", err)
	}
}
