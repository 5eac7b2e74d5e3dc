package policy

import (
	"testing"

	"github.com/distribution/reference"
)

// The tables below are containers/image's
// (signature/policy_reference_match_test.go), ported.
const (
	fullRHELRef       = "registry.access.redhat.com/rhel7/rhel:7.2.3"
	untaggedRHELRef   = "registry.access.redhat.com/rhel7/rhel"
	digestSuffix      = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	digestSuffixOther = "@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
)

type symmetric struct {
	a, b string
	want bool
}

var exactMatchTable = []symmetric{
	{"busybox:latest", "busybox:latest", true},
	{fullRHELRef, fullRHELRef, true},
	{"busybox" + digestSuffix, "busybox" + digestSuffix, true},
	{"library/busybox:latest", "busybox:latest", true},
	{"docker.io/library/busybox:latest", "busybox:latest", true},
	{"library/busybox" + digestSuffix, "busybox" + digestSuffix, true},
	{"busybox:latest", "busybox:notlatest", false},
	{"busybox:latest", "notbusybox:latest", false},
	{"busybox:latest", "hostname/library/busybox:notlatest", false},
	{"hostname/library/busybox:latest", "busybox:notlatest", false},
	{"busybox:latest", fullRHELRef, false},
	{"busybox" + digestSuffix, "notbusybox" + digestSuffix, false},
	{"busybox:latest", "busybox" + digestSuffix, false},
	{"busybox" + digestSuffix, "busybox" + digestSuffixOther, false},
	{"busybox", "busybox:latest", false},
	{"busybox", "busybox" + digestSuffix, false},
	{"busybox", "busybox", false},
	{"busybox:latest" + digestSuffix, "busybox:latest" + digestSuffix, true},
	{"busybox:latest" + digestSuffix, "busybox:latest" + digestSuffixOther, false},
	{"busybox:latest" + digestSuffix, "busybox:notlatest" + digestSuffix, false},
	{"busybox:latest" + digestSuffix, "busybox" + digestSuffix, false},
	{"busybox:latest" + digestSuffix, "busybox:latest", false},
	{"UPPERCASE_IS_INVALID_IN_DOCKER_REFERENCES", "busybox:latest", false},
	{"", "UPPERCASE_IS_INVALID_IN_DOCKER_REFERENCES", false},
	{"INVALID", "INVALID", false},
}

var repositoryMatchTable = []symmetric{
	{"busybox:latest", "busybox:latest", true},
	{fullRHELRef, fullRHELRef, true},
	{"busybox" + digestSuffix, "busybox" + digestSuffix, true},
	{"library/busybox:latest", "busybox:latest", true},
	{"docker.io/library/busybox:latest", "busybox:latest", true},
	{"library/busybox" + digestSuffix, "busybox" + digestSuffix, true},
	{"busybox:latest", "busybox:notlatest", true},
	{fullRHELRef + "tagsuffix", fullRHELRef, true},
	{"library/busybox:latest", "busybox:notlatest", true},
	{"busybox:latest", "library/busybox:notlatest", true},
	{"docker.io/library/busybox:notlatest", "busybox:latest", true},
	{"busybox:notlatest", "docker.io/library/busybox:latest", true},
	{"busybox:latest", "busybox" + digestSuffix, true},
	{"busybox" + digestSuffix, "busybox" + digestSuffixOther, true},
	{"busybox", "busybox:notlatest", true},
	{fullRHELRef, untaggedRHELRef, true},
	{"busybox", "busybox" + digestSuffix, true},
	{"library/busybox", "busybox", true},
	{"docker.io/library/busybox", "busybox", true},
	{"busybox:latest", "notbusybox:latest", false},
	{"hostname/library/busybox:latest", "busybox:notlatest", false},
	{"busybox:latest", fullRHELRef, false},
	{"busybox" + digestSuffix, "notbusybox" + digestSuffix, false},
	{"busybox:latest" + digestSuffix, "busybox:latest" + digestSuffix, true},
	{"busybox:latest" + digestSuffix, "busybox:latest" + digestSuffixOther, true},
	{"busybox:latest" + digestSuffix, "busybox:notlatest" + digestSuffix, true},
	{"busybox:latest" + digestSuffix, "busybox" + digestSuffix, true},
	{"busybox:latest" + digestSuffix, "busybox:latest", true},
	{"UPPERCASE_IS_INVALID_IN_DOCKER_REFERENCES", "busybox:latest", false},
	{"", "UPPERCASE_IS_INVALID_IN_DOCKER_REFERENCES", false},
	{"INVALID", "INVALID", false},
}

var repoDigestOrExactTable = []struct {
	image, sig string
	want       bool
}{
	{"busybox:latest", "busybox:notlatest", false},
	{fullRHELRef + "tagsuffix", fullRHELRef, false},
	{"library/busybox:latest", "busybox:notlatest", false},
	{"busybox:latest", "library/busybox:notlatest", false},
	{"docker.io/library/busybox:notlatest", "busybox:latest", false},
	{"busybox:notlatest", "docker.io/library/busybox:latest", false},
	{"busybox", "busybox:latest", false},
	{"busybox:latest", "busybox", false},
	{"busybox", "busybox" + digestSuffix, false},
	{"busybox" + digestSuffix, "busybox", false},
	{fullRHELRef, untaggedRHELRef, false},
	{"busybox", "busybox", false},
	{"busybox:latest", "busybox" + digestSuffix, false},
	{"busybox" + digestSuffix, "busybox:latest", true},
	{"busybox" + digestSuffix, "busybox" + digestSuffixOther, true},
	{"busybox:latest" + digestSuffix, "busybox:latest", false},
	{"busybox:latest" + digestSuffix, "busybox:notlatest", false},
	{"busybox:latest", "busybox:latest" + digestSuffix, false},
	{"busybox:latest" + digestSuffix, "busybox:latest" + digestSuffixOther, false},
	{"busybox:latest" + digestSuffix, "busybox:notlatest" + digestSuffixOther, false},
}

// check runs id on an image reference string; an unparseable image must
// be rejected by construction (Matches never sees it), so it counts as false.
func check(t *testing.T, id Identity, image, sig string, want bool) {
	t.Helper()
	ref, err := reference.ParseNormalizedNamed(image)
	got := err == nil && id.Matches(ref, sig)
	if got != want {
		t.Errorf("%s: image %q, signature %q: %v, want %v", id, image, sig, got, want)
	}
}

func TestSignedIdentitySymmetric(t *testing.T) {
	for _, c := range exactMatchTable {
		check(t, Identity{Type: MatchExact}, c.a, c.b, c.want)
		check(t, Identity{Type: MatchExact}, c.b, c.a, c.want)
		// exactReference: the configured reference plays the image's part.
		if _, err := reference.ParseNormalizedNamed(c.a); err == nil {
			want := c.want
			if c.a == "busybox" || c.b == "busybox" {
				want = false // name-only: rejected either way
			}
			check(t, Identity{Type: ExactReference, DockerReference: c.a}, "unrelated/image:1", c.b, want)
		}
		// matchRepoDigestOrExact accepts what matchExact accepts.
		if c.want {
			check(t, Identity{Type: MatchRepoDigestOrExact}, c.a, c.b, true)
			check(t, Identity{Type: RemapIdentity, Prefix: "docker.io", SignedPrefix: "docker.io"}, c.a, c.b, true)
		}
	}
	for _, c := range repositoryMatchTable {
		check(t, Identity{Type: MatchRepository}, c.a, c.b, c.want)
		check(t, Identity{Type: MatchRepository}, c.b, c.a, c.want)
		if _, err := reference.ParseNormalizedNamed(c.a); err == nil {
			check(t, Identity{Type: ExactRepository, DockerRepository: c.a}, "unrelated/image:1", c.b, c.want)
		}
		// … and rejects what matchRepository rejects.
		if !c.want {
			check(t, Identity{Type: MatchRepoDigestOrExact}, c.a, c.b, false)
			check(t, Identity{Type: MatchRepoDigestOrExact}, c.b, c.a, false)
		}
	}
}

func TestSignedIdentityRepoDigestOrExact(t *testing.T) {
	for _, c := range repoDigestOrExactTable {
		check(t, Identity{Type: MatchRepoDigestOrExact}, c.image, c.sig, c.want)
		check(t, Identity{Type: RemapIdentity, Prefix: "does-not-match.com", SignedPrefix: "x.example"}, c.image, c.sig, c.want)
	}
}

func TestSignedIdentityRemap(t *testing.T) {
	for _, c := range []struct {
		prefix, signedPrefix, image, sig string
		want                             bool
	}{
		{"does-not-match.com", "does-not-match.rewritten", "busybox:latest", "busybox:latest", true},
		{"does-not-match.com", "does-not-match.rewritten", "busybox:latest", "notbusybox:latest", false},
		{"mirror.example", "public.com", "mirror.example/busybox:1", "public.com/busybox:1", true},
		{"mirror.example", "public.com", "mirror.example/busybox:1", "public.com/busybox:not1", false},
		{"mirror.example", "docker.io/library", "mirror.example/busybox:latest", "busybox:latest", true},
		{"mirror.example", "docker.io/library", "mirror.example/alpine:latest", "busybox:latest", false},
		{"docker.io/library", "original.com", "copied:latest", "original.com/copied:latest", true},
		{"docker.io/library", "original.com", "copied:latest", "original.com/ns/copied:latest", false},
		{"busybox", "example.com/busybox", "busybox:latest", "example.com/busybox:latest", false},
		{"docker.io/library/busybox", "busybox", "docker.io/library/busybox:latest", "busybox:latest", false},
		// A prefix matches whole path components only.
		{"docker.io/library", "original.com", "docker.io/libraryy/image:1", "original.com/y/image:1", false},
		{"example.com:5000", "original.com", "example.com:50000/image:1", "original.com/image:1", false},
		// A digest is kept: the signature's repository must match.
		{"mirror.example", "vendor.example", "mirror.example/image" + digestSuffix, "vendor.example/image:v1", true},
		// Rewrites that build an invalid reference match nothing.
		{"mirror.example/ns/image", "vendor.example:5000", "mirror.example/ns/image:tag", "vendor.example:5000:tag", false},
	} {
		check(t, Identity{Type: RemapIdentity, Prefix: c.prefix, SignedPrefix: c.signedPrefix}, c.image, c.sig, c.want)
	}
}

func TestSignedIdentityNilImage(t *testing.T) {
	for _, typ := range []string{MatchExact, MatchRepoDigestOrExact, MatchRepository, RemapIdentity} {
		if (Identity{Type: typ, Prefix: "docker.io", SignedPrefix: "docker.io"}).Matches(nil, "busybox:latest") {
			t.Errorf("%s matched an image without a reference", typ)
		}
	}
}
