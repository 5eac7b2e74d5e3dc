package graph

import (
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
)

func TestPullCostOf(t *testing.T) {
	s, _ := newLocalTestStore(t)
	lease := s.images.NewLease()
	held := graphtest.WriteBlob(t, lease, ocispec.MediaTypeImageLayerGzip, []byte("a layer the store holds"))
	heldCfg := graphtest.WriteBlob(t, lease, ocispec.MediaTypeImageConfig, []byte(`{"a":1}`))
	// The blobs stay: they are pinned until the lease goes, and the
	// test ends first.
	t.Cleanup(func() { lease.Release() })
	missing := func(s string, n int64) ocispec.Descriptor {
		return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromString(s), Size: n}
	}
	a, b := missing("a", 100), missing("b", 250)
	cfg := missing("config", 30)
	for _, tc := range []struct {
		name   string
		config ocispec.Descriptor
		layers []ocispec.Descriptor
		want   types.PullCost
	}{
		{"nothing held", cfg, []ocispec.Descriptor{a, b}, types.PullCost{Layers: []types.DiffLayer{{Digest: a.Digest.String(), Size: 100}, {Digest: b.Digest.String(), Size: 250}}, Bytes: 380, TotalLayers: 2, Config: 30}},
		{"a layer held, the config held", heldCfg, []ocispec.Descriptor{held, b}, types.PullCost{Layers: []types.DiffLayer{{Digest: b.Digest.String(), Size: 250}}, Bytes: 250, Present: 1, TotalLayers: 2}},
		{"a layer listed twice is downloaded once", cfg, []ocispec.Descriptor{a, a, held}, types.PullCost{Layers: []types.DiffLayer{{Digest: a.Digest.String(), Size: 100}}, Bytes: 130, Present: 1, TotalLayers: 2, Config: 30}},
		{"all held", heldCfg, []ocispec.Descriptor{held}, types.PullCost{Present: 1, TotalLayers: 1}},
		{"no layers", cfg, nil, types.PullCost{Bytes: 30, Config: 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := s.pullCostOf(tc.config, tc.layers)
			if got.Bytes != tc.want.Bytes || got.Present != tc.want.Present || got.TotalLayers != tc.want.TotalLayers || got.Config != tc.want.Config || len(got.Layers) != len(tc.want.Layers) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
			for i := range got.Layers {
				if got.Layers[i] != tc.want.Layers[i] {
					t.Errorf("layer %d: %+v, want %+v", i, got.Layers[i], tc.want.Layers[i])
				}
			}
		})
	}
}
