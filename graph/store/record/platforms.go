package record

import (
	"fmt"
	"slices"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/imagespec"
)

// ErrPlatformNotPresent is wrapped (with errdefs.ErrNotFound) when an image
// does not hold the platform asked for.
var ErrPlatformNotPresent = fmt.Errorf("platform not present")

// Select is the present platforms of r that want names (each
// entry of want picks the present platform it runs best,
// imagespec.BestMatch). Without want: every present platform. An entry of
// want that r does not hold is NotFound, in dockerd's words. platformOf
// is a present platform's (read from its config when its index entry does
// not say).
func Select(r *Image, name string, want []ocispec.Platform, platformOf func(Platform) ocispec.Platform) ([]Platform, error) {
	present := r.Present()
	if len(want) == 0 {
		return present, nil
	}
	haves := make([]ocispec.Platform, len(present))
	for i, p := range present {
		haves[i] = platformOf(p)
	}
	var out []Platform
	for _, w := range want {
		i := imagespec.BestMatch(w, haves)
		if i < 0 {
			return nil, fmt.Errorf("image with reference %s was found but does not provide the specified platform (%s)%.0w%.0w",
				name, imagespec.FormatPlatform(w), ErrPlatformNotPresent, errdefs.ErrNotFound)
		}
		if !slices.ContainsFunc(out, func(o Platform) bool { return o.Manifest.Digest == present[i].Manifest.Digest }) {
			out = append(out, present[i])
		}
	}
	return out, nil
}

// primary is the platform of ps an image is recorded under: the one the
// daemon's platform runs best, else the first (ps are in the index's
// order: Docker's fallback to any present platform takes the first).
func primary(ps []Platform, daemon ocispec.Platform) Platform {
	haves := make([]ocispec.Platform, len(ps))
	for i, p := range ps {
		haves[i] = p.Platform
	}
	if i := imagespec.BestMatch(daemon, haves); i >= 0 {
		return ps[i]
	}
	return ps[0]
}

// orderPlatforms sorts ps by their position in the index target (unknown
// ones last, in their order) and drops duplicates (the first kept).
func orderPlatforms(target digest.Digest, ps []Platform, readIndex func(digest.Digest) (*ocispec.Index, error)) []Platform {
	var out []Platform
	for _, p := range ps {
		if !slices.ContainsFunc(out, func(o Platform) bool { return o.Manifest.Digest == p.Manifest.Digest }) {
			out = append(out, p)
		}
	}
	pos := map[digest.Digest]int{}
	if idx, err := readIndex(target); err == nil {
		for i, m := range idx.Manifests {
			if _, ok := pos[m.Digest]; !ok {
				pos[m.Digest] = i
			}
		}
	}
	at := func(d digest.Digest) int {
		if i, ok := pos[d]; ok {
			return i
		}
		return len(pos)
	}
	slices.SortStableFunc(out, func(a, b Platform) int { return at(a.Manifest.Digest) - at(b.Manifest.Digest) })
	return out
}

// WithPlatforms is img with platforms ps (ordered as in the index target,
// which readIndex reads; deduplicated): its ID and Manifest become the
// primary platform's, the one daemon runs best. An image whose target is
// not an index keeps no list.
func WithPlatforms(img Image, ps []Platform, daemon ocispec.Platform, readIndex func(digest.Digest) (*ocispec.Index, error)) Image {
	if !imagespec.IsIndex(img.Target.MediaType) || len(ps) == 0 {
		img.Platforms = nil
		return img
	}
	ps = orderPlatforms(img.Target.Digest, ps, readIndex)
	for i := range ps {
		ps[i].Manifest.Data = nil
		if ps[i].Manifest.Platform == nil && (ps[i].Platform.OS != "" || ps[i].Platform.Architecture != "") {
			p := ps[i].Platform
			ps[i].Manifest.Platform = &p
		}
	}
	img.Platforms = ps
	p := primary(ps, daemon)
	img.ID, img.Manifest = p.Config, p.Manifest
	return img
}
