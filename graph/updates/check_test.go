package updates

import (
	"slices"
	"testing"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/graph/store"
)

func TestCompareRemote(t *testing.T) {
	d := func(s string) digest.Digest { return digest.FromString(s) }
	amd64 := &ocispec.Platform{OS: "linux", Architecture: "amd64"}
	arm64 := ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
	index := func(amd, arm digest.Digest) *ocispec.Index {
		idx := &ocispec.Index{}
		if amd != "" {
			idx.Manifests = append(idx.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: amd, Platform: amd64})
		}
		idx.Manifests = append(idx.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: arm, Platform: &arm64})
		return idx
	}
	single := localPull{Pulled: []digest.Digest{d("m1")}, Manifest: d("m1")}
	multi := localPull{Pulled: []digest.Digest{d("ix1")}, Manifest: d("amd1"), TargetIsIndex: true, Platform: amd64}
	yes, no := true, false

	cases := []struct {
		name           string
		local          localPull
		remote         distribution.RemoteTag
		status         string
		changed        *bool
		remotePlatform digest.Digest
		platform       string
	}{
		{"single unchanged", single, distribution.RemoteTag{Descriptor: ocispec.Descriptor{Digest: d("m1")}}, types.RemoteCurrent, nil, "", ""},
		{"single moved", single, distribution.RemoteTag{Descriptor: ocispec.Descriptor{Digest: d("m2")}}, types.RemoteOutdated, &yes, d("m2"), ""},
		{"pulled under another digest too", localPull{Pulled: []digest.Digest{d("m1"), d("m0")}, Manifest: d("m1")},
			distribution.RemoteTag{Descriptor: ocispec.Descriptor{Digest: d("m0")}}, types.RemoteCurrent, nil, "", ""},
		{"index unchanged", multi, distribution.RemoteTag{Descriptor: ocispec.Descriptor{Digest: d("ix1")}, IsIndex: true}, types.RemoteCurrent, nil, "", ""},
		{"index moved, other platform only", multi, distribution.RemoteTag{Descriptor: ocispec.Descriptor{Digest: d("ix2")}, IsIndex: true, Index: index(d("amd1"), d("arm2"))},
			types.RemoteOutdated, &no, d("amd1"), "linux/amd64"},
		{"index moved, pulled platform too", multi, distribution.RemoteTag{Descriptor: ocispec.Descriptor{Digest: d("ix3")}, IsIndex: true, Index: index(d("amd3"), d("arm1"))},
			types.RemoteOutdated, &yes, d("amd3"), "linux/amd64"},
		{"index moved, pulled platform dropped", multi, distribution.RemoteTag{Descriptor: ocispec.Descriptor{Digest: d("ix4")}, IsIndex: true, Index: index("", d("arm1"))},
			types.RemoteOutdated, &yes, "", "linux/amd64"},
		{"index moved, not read", multi, distribution.RemoteTag{Descriptor: ocispec.Descriptor{Digest: d("ix5")}, IsIndex: true},
			types.RemoteOutdated, nil, "", "linux/amd64"},
		{"index replaced by the pulled platform's manifest", multi, distribution.RemoteTag{Descriptor: ocispec.Descriptor{Digest: d("amd1")}},
			types.RemoteOutdated, &no, d("amd1"), "linux/amd64"},
		{"single became an index holding it", localPull{Pulled: []digest.Digest{d("amd1")}, Manifest: d("amd1"), Platform: amd64},
			distribution.RemoteTag{Descriptor: ocispec.Descriptor{Digest: d("ix6")}, IsIndex: true, Index: index(d("amd1"), d("arm1"))},
			types.RemoteOutdated, &no, d("amd1"), "linux/amd64"},
		{"platform unknown", localPull{Pulled: []digest.Digest{d("ix1")}, Manifest: d("amd1"), TargetIsIndex: true},
			distribution.RemoteTag{Descriptor: ocispec.Descriptor{Digest: d("ix7")}, IsIndex: true, Index: index(d("amd1"), d("arm1"))},
			types.RemoteOutdated, nil, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var res types.RemoteCheckResult
			compareRemote(tc.local, tc.remote, &res)
			if res.RemoteStatus != tc.status {
				t.Errorf("status %q, want %q", res.RemoteStatus, tc.status)
			}
			if (res.PlatformChanged == nil) != (tc.changed == nil) || (tc.changed != nil && *res.PlatformChanged != *tc.changed) {
				t.Errorf("PlatformChanged %v, want %v", ptrString(res.PlatformChanged), ptrString(tc.changed))
			}
			if res.RemotePlatformDigest != tc.remotePlatform.String() {
				t.Errorf("RemotePlatformDigest %q, want %q", res.RemotePlatformDigest, tc.remotePlatform)
			}
			if res.Platform != tc.platform {
				t.Errorf("Platform %q, want %q", res.Platform, tc.platform)
			}
			if tc.status == types.RemoteOutdated && res.LocalPlatformDigest != tc.local.Manifest.String() {
				t.Errorf("LocalPlatformDigest %q, want %q", res.LocalPlatformDigest, tc.local.Manifest)
			}
		})
	}
}

func ptrString(b *bool) string {
	if b == nil {
		return "unset"
	}
	if *b {
		return "true"
	}
	return "false"
}

func TestPulledDigestsAreThoseOfTheRepository(t *testing.T) {
	top := digest.FromString("top")
	other := digest.FromString("other")
	rec := &store.ImageRecord{
		Target: ocispec.Descriptor{Digest: top},
		RepoDigests: []string{
			"docker.io/library/busybox@" + other.String(),
			"docker.io/library/busybox@" + top.String(),
			"registry.example/library/busybox@" + digest.FromString("elsewhere").String(),
			"docker.io/library/busyboxes@" + digest.FromString("prefix").String(),
		},
	}
	ref := mustNamed(t, "busybox:latest")
	got := pulledDigests(rec, ref)
	if len(got) != 2 || got[0] != top || got[1] != other {
		t.Fatalf("got %v, want [%s %s] (the top level first, this repository only)", got, top, other)
	}
	if got := pulledDigests(rec, mustNamed(t, "alpine:latest")); len(got) != 0 {
		t.Fatalf("another repository: %v", got)
	}
}

func mustNamed(t *testing.T, s string) reference.Named {
	t.Helper()
	n, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestWorkerSharesGiveEveryRegistryItsOwn(t *testing.T) {
	for _, tc := range []struct {
		tags   []int
		budget int
		want   []int
	}{
		{tags: []int{20, 5}, budget: 8, want: []int{4, 4}},
		{tags: []int{1, 100}, budget: 8, want: []int{1, 7}},
		{tags: []int{20}, budget: 8, want: []int{8}},
		{tags: []int{3}, budget: 8, want: []int{3}},
		{tags: []int{2, 2, 2}, budget: 8, want: []int{2, 2, 2}},
		{tags: []int{9, 9, 9}, budget: 8, want: []int{3, 3, 2}},
		// More registries than workers: one each, none left waiting.
		{tags: []int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, budget: 8, want: []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{tags: nil, budget: 8, want: []int{}},
	} {
		got := workerShares(tc.tags, tc.budget)
		if !slices.Equal(got, tc.want) {
			t.Errorf("workerShares(%v, %d) = %v, want %v", tc.tags, tc.budget, got, tc.want)
		}
	}
}

// TestCheckRemoteSkipping: the tags of a registry skip names are neither
// asked about nor emitted; the others are checked as by CheckRemote.
