package imagespec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Platforms, once, on top of github.com/containerd/platforms (what moby and
// containerd use): one spelling (Normalize), one parser, one notion of "a
// machine of this platform runs that image" (platforms.Only: arm/v7 runs
// v6 and v5, arm64 runs arm64/v8 and arm/v8…v5, amd64 runs 386), and one
// choice of an index's entry.

// ErrNoMatchingPlatform marks SelectManifest's NotFound: the image exists,
// only not for this platform.
var ErrNoMatchingPlatform = errors.New("no matching manifest for the platform")

// ParsePlatform parses a platform as docker's --platform and the API's
// platform parameters take it: "os/arch[/variant]" (the os may carry a
// version, "windows(10.0.17763)"), or a lone os or architecture, the other
// half taken from this machine. Aliases are normalised (x86_64 is amd64,
// aarch64 and arm64/v8 are arm64, arm is arm/v7). Whatever
// platforms.Parse refuses — an empty string, more than three parts, any
// character outside [A-Za-z0-9_-] ("../../etc"), a wildcard — is refused
// with errdefs.ErrInvalidArgument.
func ParsePlatform(s string) (ocispec.Platform, error) {
	p, err := platforms.Parse(s)
	if err != nil {
		return ocispec.Platform{}, fmt.Errorf("invalid platform %q: want os/arch[/variant], e.g. linux/arm64 or linux/arm/v7%.0w", s, errdefs.ErrInvalidArgument)
	}
	return NormalizePlatform(p), nil
}

// NormalizePlatform is p in its one spelling (platforms.Normalize): lower
// case, aliases mapped, default variants dropped (arm64/v8 is arm64,
// amd64/v1 is amd64) or made explicit (arm is arm/v7). An empty OS is this
// machine's.
func NormalizePlatform(p ocispec.Platform) ocispec.Platform {
	return platforms.Normalize(p)
}

// FormatPlatform is os/arch[/variant] (platforms.Format; "unknown" when p
// has no OS).
func FormatPlatform(p ocispec.Platform) string {
	return platforms.Format(p)
}

// PlatformMatches reports whether have satisfies want: whether a machine of
// platform want runs an image of platform have, as platforms.Only(want)
// says (arm/v7 runs arm/v6, arm64 runs arm64/v8, amd64 runs 386; both
// normalised first). An empty OS or architecture in want matches any (a
// partial platform: the architecture alone, or the OS alone); the variant
// is then have's too when the architecture is empty.
func PlatformMatches(want, have ocispec.Platform) bool {
	if want.OS == "" {
		want.OS = have.OS
	}
	if want.Architecture == "" {
		want.Architecture, want.Variant = have.Architecture, have.Variant
	}
	return platforms.Only(want).Match(have)
}

// BestMatch is the position in haves of the platform want runs best: of
// those PlatformMatches accepts, the first in platforms.Only(want)'s order
// (want itself, then the older variants it runs, newest first, then what
// else it runs: arm64 runs arm/v8…v5 after arm64, amd64 runs 386 last), the
// first of equals; -1 when none matches. With want's architecture empty
// every match is equal (the first wins); with its OS empty the OS plays no
// part in the order.
func BestMatch(want ocispec.Platform, haves []ocispec.Platform) int {
	var order platforms.MatchComparer
	if want.Architecture != "" {
		order = platforms.Only(want)
	}
	key := func(p ocispec.Platform) ocispec.Platform {
		if want.OS == "" {
			p.OS = "" // compared as want's (normalised) OS
		}
		return p
	}
	best := -1
	for i, have := range haves {
		if !PlatformMatches(want, have) {
			continue
		}
		if best < 0 || order != nil && order.Less(key(have), key(haves[best])) {
			best = i
		}
	}
	return best
}

// DefaultPlatform fills what p leaves out as a daemon pulling for this
// machine would: linux, then this machine's architecture and variant.
func DefaultPlatform(p ocispec.Platform) ocispec.Platform {
	if p.OS == "" {
		p.OS = "linux"
	}
	if p.Architecture == "" {
		def := platforms.DefaultSpec()
		p.Architecture, p.Variant = def.Architecture, def.Variant
	}
	return p
}

// SelectManifest chooses the entry of idx for platform p (DefaultPlatform
// fills what p leaves out): the one BestMatch ranks first (its own variant,
// then the older ones it runs, newest first; arm64 without a variant is
// v8), the first in the index among equals. Attestations (IsAttestation)
// and entries without a platform are never chosen. When none matches:
// errdefs.ErrNotFound and ErrNoMatchingPlatform, naming the platforms the
// index has.
func SelectManifest(idx *ocispec.Index, p ocispec.Platform) (ocispec.Descriptor, error) {
	if idx == nil {
		return ocispec.Descriptor{}, fmt.Errorf("no index%.0w", errdefs.ErrInvalidArgument)
	}
	want := NormalizePlatform(DefaultPlatform(p))
	var entries []ocispec.Descriptor
	var haves []ocispec.Platform
	var available []string
	for _, d := range idx.Manifests {
		if d.Platform == nil || IsAttestation(d) {
			continue
		}
		entries, haves = append(entries, d), append(haves, *d.Platform)
		available = append(available, FormatPlatform(NormalizePlatform(*d.Platform)))
	}
	best := BestMatch(want, haves)
	if best < 0 {
		return ocispec.Descriptor{}, fmt.Errorf("no matching manifest for %s in the manifest list entries: [%s]%.0w%.0w",
			FormatPlatform(want), strings.Join(available, ", "), errdefs.ErrNotFound, ErrNoMatchingPlatform)
	}
	return entries[best], nil
}
