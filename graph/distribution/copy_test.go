package distribution

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry"
)

func TestTransferPlanDistinctForeignSkipped(t *testing.T) {
	d := func(s string) ocispec.Descriptor {
		return ocispec.Descriptor{Digest: digest.FromString(s), Size: int64(len(s))}
	}
	shared, own, foreign := d("shared"), d("own"), d("foreign")
	foreign.URLs = []string{"https://example.invalid/layer"}
	cfgA, cfgB := d("config a"), d("config b")
	ms := []planManifest{
		{man: ocispec.Manifest{Config: cfgA, Layers: []ocispec.Descriptor{foreign, shared}}},
		{man: ocispec.Manifest{Config: cfgB, Layers: []ocispec.Descriptor{shared, own}}},
		{}, // the index itself: no config, no layers
	}
	for _, tc := range []struct {
		name           string
		includeForeign bool
		want           []ocispec.Descriptor
		skipped        int
	}{
		{"default", false, []ocispec.Descriptor{shared, own}, 1},
		{"include foreign", true, []ocispec.Descriptor{foreign, shared, own}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTransferPlan(ms[2], ms, tc.includeForeign)
			got, configs, skipped := p.layers, p.configs, p.skipped
			if len(configs) != 2 || configs[0].Digest != cfgA.Digest || configs[1].Digest != cfgB.Digest {
				t.Errorf("configs = %v, want a and b", configs)
			}
			if skipped != tc.skipped || len(got) != len(tc.want) {
				t.Fatalf("got %d blobs (%d skipped), want %d (%d)", len(got), skipped, len(tc.want), tc.skipped)
			}
			for i := range got {
				if got[i].Digest != tc.want[i].Digest {
					t.Errorf("blob %d = %s, want %s", i, got[i].Digest, tc.want[i].Digest)
				}
			}
		})
	}
}

func TestParseRemoteManifestRefusesSchema1AndGarbage(t *testing.T) {
	for name, tc := range map[string]struct {
		mt   string
		body string
	}{
		"schema1": {"application/vnd.docker.distribution.manifest.v1+prettyjws", `{"schemaVersion":1}`},
		"garbage": {ocispec.MediaTypeImageManifest, `{not json`},
	} {
		if _, err := parseRemoteManifest(ocispec.Descriptor{MediaType: tc.mt, Digest: digest.FromString(tc.body)}, []byte(tc.body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A whole-index copy holds every platform manifest until it writes them:
// their count and declared bytes are bounded before any is fetched
// (issue 20, finding 1), and beyond is the registry's 502.
func TestCopyIndexBudget(t *testing.T) {
	entries := func(n int, size int64) []ocispec.Descriptor {
		out := make([]ocispec.Descriptor, n)
		for i := range out {
			out[i] = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString(fmt.Sprint(i)), Size: size}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		entries []ocispec.Descriptor
		want    string // "" = accepted
	}{
		{"tens of small manifests", entries(40, 2048), ""},
		{"4 at the 4 MiB cap: the byte budget", entries(4, 4<<20), ""},
		{"5 at the 4 MiB cap", entries(5, 4<<20), "lists 5 manifests of 20971520 bytes"},
		{"32 at the 4 MiB cap (the red team's)", entries(32, 4<<20), "lists 32 manifests"},
		{"1,000 small manifests", entries(1000, 200), ""},
		{"1,001 small manifests", entries(1001, 200), "at most 1000 manifests"},
	} {
		res := &registry.Resolved{TopLevel: registry.TopLevel{Registry: "h", Index: &ocispec.Index{Manifests: tc.entries}}}
		err := checkIndexBudget(res)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "registry h") || !errors.Is(err, registry.ErrUpstream)):
			t.Errorf("%s: %v, want ErrUpstream naming registry h and %q", tc.name, err, tc.want)
		}
	}
}
