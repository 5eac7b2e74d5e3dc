package imagespec

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func plat(os, arch, variant string) ocispec.Platform {
	return ocispec.Platform{OS: os, Architecture: arch, Variant: variant}
}

func TestParsePlatform(t *testing.T) {
	tests := []struct {
		in   string
		want ocispec.Platform
	}{
		{"linux/amd64", plat("linux", "amd64", "")},
		{"linux/amd64/v1", plat("linux", "amd64", "")},
		{"linux/amd64/v3", plat("linux", "amd64", "v3")},
		{"linux/arm64", plat("linux", "arm64", "")},
		{"linux/arm64/v8", plat("linux", "arm64", "")},
		{"linux/aarch64", plat("linux", "arm64", "")},
		{"linux/arm", plat("linux", "arm", "v7")},
		{"linux/arm/v7", plat("linux", "arm", "v7")},
		{"linux/arm/v6", plat("linux", "arm", "v6")},
		{"linux/armhf", plat("linux", "arm", "v7")},
		{"linux/armel", plat("linux", "arm", "v6")},
		{"Linux/X86_64", plat("linux", "amd64", "")},
		{"linux/i386", plat("linux", "386", "")},
		{"linux/s390x", plat("linux", "s390x", "")},
		{"linux/riscv64", plat("linux", "riscv64", "")},
		{"windows/amd64", plat("windows", "amd64", "")},
		{"macos/arm64", plat("darwin", "arm64", "")},
		{"windows(10.0.17763)/amd64", ocispec.Platform{OS: "windows", OSVersion: "10.0.17763", Architecture: "amd64"}},
		// A lone OS or architecture: the rest is this machine's (as docker).
		{"linux", ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH, Variant: NormalizePlatform(DefaultPlatform(ocispec.Platform{})).Variant}},
		{"s390x", plat(runtime.GOOS, "s390x", "")},
	}
	for _, tc := range tests {
		got, err := ParsePlatform(tc.in)
		if err != nil {
			t.Errorf("ParsePlatform(%q): %v", tc.in, err)
			continue
		}
		if got.OS != tc.want.OS || got.Architecture != tc.want.Architecture || got.Variant != tc.want.Variant || got.OSVersion != tc.want.OSVersion {
			t.Errorf("ParsePlatform(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestParsePlatformRefuses(t *testing.T) {
	for _, in := range []string{
		"",
		"/",
		"../../etc",
		"linux/../amd64",
		"linux/amd64/../../x",
		"./linux/amd64",
		"linux//amd64",
		"linux/amd64/",
		"/amd64",
		"linux/amd64/v8/extra",
		"a/b/c/d/e",
		"linux/*",
		"linux/amd 64",
		"linux/amd64\n",
		"linux/amd64;rm",
		`linux\amd64`,
		"linux/amd64%2f",
		"nosuchthing", // neither a known OS nor a known architecture
		"linux/amd64/v1.0",
	} {
		p, err := ParsePlatform(in)
		if err == nil {
			t.Errorf("ParsePlatform(%q) = %+v, want an error", in, p)
			continue
		}
		if !errdefs.IsInvalidArgument(err) {
			t.Errorf("ParsePlatform(%q): %v is not InvalidArgument", in, err)
		}
		if want := fmt.Sprintf("invalid platform %q: want os/arch[/variant]", in); !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParsePlatform(%q): %q does not say what is wrong and what is wanted", in, err)
		}
	}
}

func TestFormatPlatform(t *testing.T) {
	tests := []struct {
		p    ocispec.Platform
		want string
	}{
		{plat("linux", "amd64", ""), "linux/amd64"},
		{plat("linux", "arm", "v7"), "linux/arm/v7"},
		{plat("windows", "s390x", ""), "windows/s390x"},
		{plat("", "arm64", ""), "unknown"},
	}
	for _, tc := range tests {
		if got := FormatPlatform(tc.p); got != tc.want {
			t.Errorf("FormatPlatform(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
	// What ParsePlatform reads, FormatPlatform writes back in one spelling.
	for _, s := range []string{"linux/amd64", "linux/arm64", "linux/arm/v7", "linux/arm/v6", "windows/amd64", "linux/s390x"} {
		p, err := ParsePlatform(s)
		if err != nil || FormatPlatform(p) != s {
			t.Errorf("FormatPlatform(ParsePlatform(%q)) = %q, %v", s, FormatPlatform(p), err)
		}
	}
}

func TestPlatformMatches(t *testing.T) {
	tests := []struct {
		want, have ocispec.Platform
		match      bool
	}{
		{plat("linux", "amd64", ""), plat("linux", "amd64", ""), true},
		{plat("linux", "amd64", ""), plat("linux", "amd64", "v1"), true},
		{plat("linux", "x86_64", ""), plat("linux", "amd64", ""), true},
		{plat("linux", "amd64", ""), plat("linux", "386", ""), true}, // amd64 runs 386
		{plat("linux", "386", ""), plat("linux", "amd64", ""), false},
		{plat("linux", "amd64", ""), plat("linux", "amd64", "v2"), false}, // a v1 machine does not run v2
		{plat("linux", "amd64", "v3"), plat("linux", "amd64", "v2"), true},
		{plat("linux", "amd64", ""), plat("windows", "amd64", ""), false},
		{plat("linux", "amd64", ""), plat("linux", "arm64", ""), false},
		// arm64 without a variant is v8, and runs 32-bit arm.
		{plat("linux", "arm64", ""), plat("linux", "arm64", "v8"), true},
		{plat("linux", "arm64", "v8"), plat("linux", "arm64", ""), true},
		{plat("linux", "aarch64", ""), plat("linux", "arm64", ""), true},
		{plat("linux", "arm64", ""), plat("linux", "arm", "v7"), true},
		{plat("linux", "arm64", ""), plat("linux", "arm64", "v9"), false},
		// arm/vN runs vN and older.
		{plat("linux", "arm", ""), plat("linux", "arm", "v7"), true},
		{plat("linux", "arm", "v7"), plat("linux", "arm", ""), true},
		{plat("linux", "arm", "v7"), plat("linux", "arm", "v6"), true},
		{plat("linux", "arm", "v7"), plat("linux", "arm", "v5"), true},
		{plat("linux", "arm", "v6"), plat("linux", "arm", "v7"), false},
		{plat("linux", "arm", "v7"), plat("linux", "arm64", ""), false},
		// Empty fields of want match anything (a partial platform).
		{plat("", "arm64", ""), plat("linux", "arm64", ""), true},
		{plat("", "arm64", ""), plat("windows", "arm64", ""), true},
		{plat("", "arm64", ""), plat("linux", "amd64", ""), false},
		{plat("linux", "", ""), plat("linux", "s390x", ""), true},
		{plat("linux", "", ""), plat("linux", "arm", "v5"), true},
		{plat("linux", "", ""), plat("windows", "amd64", ""), false},
		{plat("", "", ""), plat("windows", "amd64", ""), true},
	}
	for _, tc := range tests {
		if got := PlatformMatches(tc.want, tc.have); got != tc.match {
			t.Errorf("PlatformMatches(%+v, %+v) = %v, want %v", tc.want, tc.have, got, tc.match)
		}
	}
}

func entry(n int, os, arch, variant string) ocispec.Descriptor {
	return ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageManifest,
		Digest:    digest.FromString(string(rune('a' + n))),
		Platform:  &ocispec.Platform{OS: os, Architecture: arch, Variant: variant},
	}
}

func TestSelectManifest(t *testing.T) {
	attestation := entry(90, "unknown", "unknown", "")
	attestation.Annotations = map[string]string{AnnotationReferenceType: AttestationManifestType}
	// BuildKit gives attestations unknown/unknown; one that names a real
	// platform is skipped all the same.
	namedAttestation := entry(91, "linux", "amd64", "")
	namedAttestation.Annotations = map[string]string{AnnotationReferenceType: AttestationManifestType}
	noPlatform := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("np")}

	multi := []ocispec.Descriptor{
		attestation,
		namedAttestation,
		entry(1, "linux", "amd64", ""),
		entry(2, "linux", "arm", "v6"),
		entry(3, "linux", "arm", "v7"),
		entry(4, "linux", "arm64", "v8"),
		entry(5, "windows", "amd64", ""),
		noPlatform,
	}
	tests := []struct {
		name    string
		index   []ocispec.Descriptor
		want    ocispec.Platform
		pick    int    // index into index; -1 = not found
		errText string // with pick -1: the whole message
	}{
		{name: "amd64", index: multi, want: plat("linux", "amd64", ""), pick: 2},
		{name: "x86_64 alias", index: multi, want: plat("linux", "x86_64", ""), pick: 2},
		{name: "arm64 default v8", index: multi, want: plat("linux", "arm64", ""), pick: 5},
		{name: "aarch64 alias", index: multi, want: plat("linux", "aarch64", ""), pick: 5},
		{name: "arm64/v8 explicit", index: multi, want: plat("linux", "arm64", "v8"), pick: 5},
		{name: "arm means v7", index: multi, want: plat("linux", "arm", ""), pick: 4},
		{name: "arm/v6", index: multi, want: plat("linux", "arm", "v6"), pick: 3},
		{name: "windows", index: multi, want: plat("windows", "amd64", ""), pick: 6},
		{name: "empty OS is linux", index: multi, want: plat("", "arm64", ""), pick: 5},
		{name: "no match names what exists", index: multi, want: plat("linux", "s390x", ""), pick: -1,
			errText: "no matching manifest for linux/s390x in the manifest list entries: [linux/amd64, linux/arm/v6, linux/arm/v7, linux/arm64, windows/amd64]"},
		{name: "attestations are never chosen", index: multi, want: plat("unknown", "unknown", ""), pick: -1,
			errText: "no matching manifest for unknown/unknown in the manifest list entries: [linux/amd64, linux/arm/v6, linux/arm/v7, linux/arm64, windows/amd64]"},
		{name: "an attestation for the platform only", index: []ocispec.Descriptor{namedAttestation, entry(1, "linux", "arm64", "")}, want: plat("linux", "amd64", ""), pick: -1,
			errText: "no matching manifest for linux/amd64 in the manifest list entries: [linux/arm64]"},
		{name: "empty index", index: nil, want: plat("linux", "amd64", ""), pick: -1,
			errText: "no matching manifest for linux/amd64 in the manifest list entries: []"},

		// Variants: a platform's own first, then the older ones it runs, newest first.
		{name: "arm/v7 prefers v7 wherever it is", index: []ocispec.Descriptor{entry(1, "linux", "arm", "v5"), entry(2, "linux", "arm", "v6"), entry(3, "linux", "arm", "v7")}, want: plat("linux", "arm", "v7"), pick: 2},
		{name: "arm/v7 runs v6 before v5", index: []ocispec.Descriptor{entry(1, "linux", "arm", "v5"), entry(2, "linux", "arm", "v6")}, want: plat("linux", "arm", "v7"), pick: 1},
		{name: "arm/v7 runs v5", index: []ocispec.Descriptor{entry(1, "linux", "arm", "v5")}, want: plat("linux", "arm", "v7"), pick: 0},
		{name: "arm/v6 does not run v7", index: []ocispec.Descriptor{entry(1, "linux", "arm", "v7"), entry(2, "linux", "arm64", "")}, want: plat("linux", "arm", "v6"), pick: -1,
			errText: "no matching manifest for linux/arm/v6 in the manifest list entries: [linux/arm/v7, linux/arm64]"},
		{name: "arm without a variant is v7", index: []ocispec.Descriptor{entry(1, "linux", "arm", "v6"), entry(2, "linux", "arm", "")}, want: plat("linux", "arm", "v7"), pick: 1},
		{name: "arm64 prefers arm64 over arm", index: []ocispec.Descriptor{entry(1, "linux", "arm", "v7"), entry(2, "linux", "arm64", "")}, want: plat("linux", "arm64", ""), pick: 1},
		{name: "arm64 runs arm/v7 when there is no arm64", index: []ocispec.Descriptor{entry(1, "linux", "arm", "v6"), entry(2, "linux", "arm", "v7"), entry(3, "linux", "amd64", "")}, want: plat("linux", "arm64", ""), pick: 1},
		{name: "arm64 does not run v9", index: []ocispec.Descriptor{entry(1, "linux", "arm64", "v9")}, want: plat("linux", "arm64", ""), pick: -1,
			errText: "no matching manifest for linux/arm64 in the manifest list entries: [linux/arm64/v9]"},
		{name: "amd64/v3 runs v2 before v1", index: []ocispec.Descriptor{entry(1, "linux", "amd64", ""), entry(2, "linux", "amd64", "v2")}, want: plat("linux", "amd64", "v3"), pick: 1},
		{name: "amd64 runs 386 last", index: []ocispec.Descriptor{entry(1, "linux", "386", ""), entry(2, "linux", "amd64", "")}, want: plat("linux", "amd64", ""), pick: 1},
		{name: "amd64 runs 386", index: []ocispec.Descriptor{entry(1, "linux", "386", "")}, want: plat("linux", "amd64", ""), pick: 0},
		{name: "equals: the first in the index", index: []ocispec.Descriptor{entry(1, "linux", "amd64", ""), entry(2, "linux", "amd64", "v1")}, want: plat("linux", "amd64", ""), pick: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			idx := &ocispec.Index{Manifests: tc.index}
			got, err := SelectManifest(idx, tc.want)
			if tc.pick < 0 {
				if !errdefs.IsNotFound(err) || !errors.Is(err, ErrNoMatchingPlatform) {
					t.Fatalf("got %+v, %v; want NotFound and ErrNoMatchingPlatform", got.Platform, err)
				}
				if err.Error() != tc.errText {
					t.Errorf("error %q, want %q", err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Digest != tc.index[tc.pick].Digest {
				t.Errorf("picked %+v, want %+v", got.Platform, tc.index[tc.pick].Platform)
			}
		})
	}
}

func TestSelectManifestDefaultsToThisMachine(t *testing.T) {
	def := NormalizePlatform(DefaultPlatform(ocispec.Platform{}))
	if def.OS != "linux" || def.Architecture != runtime.GOARCH {
		t.Fatalf("DefaultPlatform = %+v, want linux/%s", def, runtime.GOARCH)
	}
	here := entry(1, def.OS, def.Architecture, def.Variant)
	other := entry(2, "linux", "s390x", "")
	if runtime.GOARCH == "s390x" {
		other = entry(2, "linux", "ppc64le", "")
	}
	got, err := SelectManifest(&ocispec.Index{Manifests: []ocispec.Descriptor{other, here}}, ocispec.Platform{})
	if err != nil || got.Digest != here.Digest {
		t.Errorf("empty platform picked %+v, %v; want this machine's %+v", got.Platform, err, here.Platform)
	}
	if _, err := SelectManifest(nil, def); !errdefs.IsInvalidArgument(err) {
		t.Errorf("nil index: %v, want InvalidArgument", err)
	}
}

func TestBestMatch(t *testing.T) {
	tests := []struct {
		name  string
		want  ocispec.Platform
		haves []ocispec.Platform
		best  int
	}{
		{"own variant wherever it is", plat("linux", "arm", "v7"), []ocispec.Platform{plat("linux", "arm", "v5"), plat("linux", "arm", "v6"), plat("linux", "arm", "v7")}, 2},
		{"newest older variant", plat("linux", "arm", "v7"), []ocispec.Platform{plat("linux", "arm", "v5"), plat("linux", "arm", "v6")}, 1},
		{"arm64 before arm", plat("linux", "arm64", ""), []ocispec.Platform{plat("linux", "arm", "v7"), plat("linux", "arm64", "v8")}, 1},
		{"amd64 before 386", plat("linux", "amd64", ""), []ocispec.Platform{plat("linux", "386", ""), plat("linux", "amd64", "")}, 1},
		{"none", plat("linux", "arm", "v6"), []ocispec.Platform{plat("linux", "arm", "v7"), plat("linux", "amd64", "")}, -1},
		{"no candidates", plat("linux", "amd64", ""), nil, -1},
		{"first of equals", plat("linux", "amd64", ""), []ocispec.Platform{plat("linux", "arm64", ""), plat("linux", "amd64", "v1"), plat("linux", "amd64", "")}, 1},
		// Partial wants: the empty fields match anything.
		{"any OS, ranked by arch", plat("", "arm", "v7"), []ocispec.Platform{plat("windows", "arm", "v6"), plat("freebsd", "arm", "v7"), plat("linux", "amd64", "")}, 1},
		{"any architecture: the first that matches the OS", plat("linux", "", ""), []ocispec.Platform{plat("windows", "amd64", ""), plat("linux", "arm", "v5"), plat("linux", "amd64", "")}, 1},
		{"nothing asked: the first", ocispec.Platform{}, []ocispec.Platform{plat("windows", "amd64", ""), plat("linux", "arm", "v5")}, 0},
	}
	for _, tc := range tests {
		if got := BestMatch(tc.want, tc.haves); got != tc.best {
			t.Errorf("%s: BestMatch(%+v, %v) = %d, want %d", tc.name, tc.want, tc.haves, got, tc.best)
		}
	}
}
