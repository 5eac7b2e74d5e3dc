package diff

import (
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// SharedPrefix is how many layers a and b share at the bottom, by digest:
// those are the same bytes in the same place, so the files section need
// not read them.
func SharedPrefix(a, b []ocispec.Descriptor) int {
	n := 0
	for n < len(a) && n < len(b) && a[n].Digest == b[n].Digest {
		n++
	}
	return n
}

// Layers is the layers section: the layers both sides hold (by digest,
// wherever they are), those only b holds (added) and those only a holds
// (removed), each in its side's order.
func Layers(a, b []ocispec.Descriptor) *types.LayersDiff {
	inA, inB := digests(a), digests(b)
	d := &types.LayersDiff{}
	seen := map[digest.Digest]bool{}
	for _, l := range a {
		if seen[l.Digest] {
			continue
		}
		seen[l.Digest] = true
		if inB[l.Digest] {
			d.Shared = append(d.Shared, layerOf(l))
		} else {
			d.Removed = append(d.Removed, layerOf(l))
		}
	}
	for _, l := range b {
		if !inA[l.Digest] && !seen[l.Digest] {
			seen[l.Digest] = true
			d.Added = append(d.Added, layerOf(l))
		}
	}
	return d
}

func digests(ls []ocispec.Descriptor) map[digest.Digest]bool {
	m := make(map[digest.Digest]bool, len(ls))
	for _, l := range ls {
		m[l.Digest] = true
	}
	return m
}

func layerOf(l ocispec.Descriptor) types.DiffLayer {
	return types.DiffLayer{Digest: l.Digest.String(), Size: l.Size}
}

// PullCost is what a pull of an image (its layers and config) downloads
// given has, which says whether the store holds a blob: each layer it
// lacks, once, and the config when it lacks it. Manifests are not
// counted: they are read to know the image at all.
func PullCost(layers []ocispec.Descriptor, config ocispec.Descriptor, has func(digest.Digest) bool) *types.PullCost {
	pc := &types.PullCost{}
	seen := map[digest.Digest]bool{}
	for _, l := range layers {
		if seen[l.Digest] {
			continue
		}
		seen[l.Digest] = true
		pc.TotalLayers++
		if has(l.Digest) {
			pc.Present++
			continue
		}
		pc.Layers = append(pc.Layers, layerOf(l))
		pc.Bytes += l.Size
	}
	if config.Digest != "" && !has(config.Digest) {
		pc.ConfigSize = config.Size
		pc.Bytes += config.Size
	}
	return pc
}
