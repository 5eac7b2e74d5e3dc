package registry

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// normalisePlatform maps architecture aliases and default variants to one
// spelling, as containerd's platforms.Normalize does: arm64 and arm64/v8
// are the same platform, amd64/v1 is amd64, arm is arm/v7.
func normalisePlatform(p ocispec.Platform) ocispec.Platform {
	p.OS = strings.ToLower(p.OS)
	if p.OS == "macos" {
		p.OS = "darwin"
	}
	arch, variant := strings.ToLower(p.Architecture), strings.ToLower(p.Variant)
	switch arch {
	case "i386":
		arch, variant = "386", ""
	case "x86_64", "x86-64", "amd64":
		arch = "amd64"
		if variant == "v1" {
			variant = ""
		}
	case "aarch64", "arm64":
		arch = "arm64"
		switch variant {
		case "8", "v8", "v8.0":
			variant = ""
		case "9", "9.0", "v9.0":
			variant = "v9"
		}
	case "armhf":
		arch, variant = "arm", "v7"
	case "armel":
		arch, variant = "arm", "v6"
	case "arm":
		switch variant {
		case "", "7":
			variant = "v7"
		case "5", "6", "8":
			variant = "v" + variant
		}
	}
	p.Architecture, p.Variant = arch, variant
	return p
}

func formatPlatform(p ocispec.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// variantRank orders variants of one architecture: a platform runs its own
// variant and the older ones (arm/v7 runs v6 and v5; amd64/v3 runs v2, v1).
// -1 when the variant is not an ordered "vN".
func variantRank(v string) int {
	if v == "" {
		return 1 // normalised default (amd64/v1, arm64/v8)
	}
	if len(v) >= 2 && v[0] == 'v' {
		n := 0
		for _, c := range v[1:] {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	return -1
}

// ErrNoMatchingPlatform marks SelectManifest's NotFound: the image exists,
// only not for this platform (so neither v1 nor another registry is tried).

// SelectManifest chooses the entry of idx for platform p (variant-aware,
// attestations skipped); when none matches, errdefs.ErrNotFound naming the
// platforms that exist. An empty p.OS / p.Architecture means linux / the
// daemon's architecture.
func SelectManifest(idx *ocispec.Index, p ocispec.Platform) (ocispec.Descriptor, error) {
	if idx == nil {
		return ocispec.Descriptor{}, fmt.Errorf("no index%.0w", errdefs.ErrInvalidArgument)
	}
	if p.OS == "" {
		p.OS = "linux"
	}
	if p.Architecture == "" {
		p.Architecture = runtime.GOARCH
	}
	want := normalisePlatform(p)
	wantRank := variantRank(want.Variant)
	best, bestScore := -1, 0
	var available []string
	for i, m := range idx.Manifests {
		if m.Platform == nil || (m.Platform.OS == "unknown" && m.Platform.Architecture == "unknown") {
			continue // attestations and other non-image entries
		}
		have := normalisePlatform(*m.Platform)
		available = append(available, formatPlatform(have))
		if have.OS != want.OS || have.Architecture != want.Architecture {
			continue
		}
		score := 0
		switch hr := variantRank(have.Variant); {
		case have.Variant == want.Variant:
			score = 1000
		case want.Variant == "" && (hr < 0 || hr > wantRank):
			score = 1 // asked for no variant: anything of this arch, least preferred
		case wantRank > 0 && hr > 0 && hr <= wantRank:
			score = 100 + hr // an older variant this platform runs; newest first
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		return ocispec.Descriptor{}, fmt.Errorf("no matching manifest for %s in the manifest list entries: [%s]%.0w%.0w",
			formatPlatform(want), strings.Join(available, ", "), errdefs.ErrNotFound, ErrNoMatchingPlatform)
	}
	return idx.Manifests[best], nil
}
