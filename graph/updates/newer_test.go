package updates

import (
	"fmt"
	"strings"
	"testing"
)

func TestNewerVersionsShape(t *testing.T) {
	repo := strings.Fields(`latest stable 20240101 20240201 2024-01-01 2025-01-01 sha-abc
		1 2 3 1.25 1.26 1.27 1.25.3 1.25.4 1.25.5 1.26.0 1.27.0 1.27.3 2.0.0 2.1.0
		1.25-alpine 1.27-alpine 1.27-bookworm 1.25.3-alpine 1.25.9-alpine 2.0.0-alpine
		1.26.0-rc1 1.26.0-rc2 1.28.0-rc1 1.26.0-rc1-alpine 1.26.0-rc3-alpine 3.0.0-beta.1
		v1.2 v1.3 v2.0 v1.2.0 v1.2.1 v1.3.0`)
	for _, tc := range []struct {
		local               string
		patch, minor, major string
		notVersion          bool
	}{
		{local: "1.25", minor: "1.27"},                                      // same precision: not 1.27.3
		{local: "1.25.3", patch: "1.25.5", minor: "1.27.3", major: "2.1.0"}, // not 1.28.0-rc1, not 3.0.0-beta.1
		{local: "1", major: "3"},
		{local: "3"},
		{local: "1.25-alpine", minor: "1.27-alpine"}, // same variant: not 1.27, not 1.27-bookworm
		{local: "1.25.3-alpine", patch: "1.25.9-alpine", major: "2.0.0-alpine"},
		{local: "1.26.0-rc1", patch: "1.26.0", minor: "1.28.0-rc1", major: "3.0.0-beta.1"}, // a pre-release is offered pre-releases and releases
		{local: "1.27.0-rc1", patch: "1.27.3", minor: "1.28.0-rc1", major: "3.0.0-beta.1"},
		{local: "1.26.0-rc1-alpine", patch: "1.26.0-rc3-alpine", major: "2.0.0-alpine"},
		{local: "v1.2", minor: "v1.3", major: "v2.0"}, // the v kept: never 1.3
		{local: "v1.2.0", patch: "v1.2.1", minor: "v1.3.0"},
		{local: "1.2", minor: "1.27", major: ""}, // 2 is precision 1, not offered to 1.2
		{local: "2.1.0"},
		{local: "latest", notVersion: true},
		{local: "stable", notVersion: true},
		{local: "20240101", notVersion: true},
		{local: "2024-01-01", notVersion: true},
		{local: "sha-abc", notVersion: true},
	} {
		got, ok := newerVersions(tc.local, repo)
		if ok == tc.notVersion {
			t.Errorf("%s: version %v, want %v", tc.local, ok, !tc.notVersion)
		}
		want := newerTags{Patch: tc.patch, Minor: tc.minor, Major: tc.major}
		if got != want {
			t.Errorf("%s: got %+v, want %+v", tc.local, got, want)
		}
	}
}

func TestNewerVersionsPrecisionAndPrefixNeverMix(t *testing.T) {
	got, _ := newerVersions("1.2", []string{"v1.3", "1.3.0", "1.3-rc1", "1.3"})
	if got != (newerTags{Minor: "1.3"}) {
		t.Errorf("got %+v", got)
	}
}

// FuzzNewerVersions: whatever the tags, an answer is a tag of the listing,
// of the local tag's shape, higher than it, at its level.
func FuzzNewerVersions(f *testing.F) {
	f.Add("1.25-alpine", "1.27-alpine 1.27 latest 1.26.0-rc1 v1.28")
	f.Add("v1.2.3", "v1.2.4 v2.0.0 1.3.0 20240101")
	f.Fuzz(func(t *testing.T, local, listing string) {
		tags := strings.Fields(listing)
		got, ok := newerVersions(local, tags)
		lv, lok := parseVersionShape(local)
		if ok != lok {
			t.Fatalf("ok %v, parse %v", ok, lok)
		}
		for lvl, n := range []string{got.Patch, got.Minor, got.Major} {
			if n == "" {
				continue
			}
			cv, cok := parseVersionShape(n)
			switch {
			case !cok || !ok:
				t.Fatalf("%q offered %q (level %d), not a version", local, n, lvl)
			case !lv.sameShape(cv):
				t.Fatalf("%q offered %q of another shape", local, n)
			case cv.key.Compare(lv.key) <= 0:
				t.Fatalf("%q offered %q, not higher", local, n)
			case lvl == 2 && cv.key.Nums[0] == lv.key.Nums[0],
				lvl < 2 && cv.key.Nums[0] != lv.key.Nums[0],
				lvl == 1 && cv.key.Nums[1] == lv.key.Nums[1],
				lvl == 0 && cv.key.Nums[1] != lv.key.Nums[1]:
				t.Fatalf("%q offered %q at level %d", local, n, lvl)
			}
			found := false
			for _, t := range tags {
				found = found || t == n
			}
			if !found {
				t.Fatalf("%q offered %q, not in the listing", local, n)
			}
		}
	})
}

// BenchmarkNewerVersionsListing: the newer versions of 10 tags against a
// listing of 10,000, read once (as one check run reads a repository).
func BenchmarkNewerVersionsListing(b *testing.B) {
	var tags []string
	for i := range 10000 {
		tags = append(tags, fmt.Sprintf("%d.%d.%d", i/1000, (i/10)%100, i%10), fmt.Sprintf("sha-%x", i))
	}
	b.ReportAllocs()
	for b.Loop() {
		vt := parseTagVersions(tags)
		for i := range 10 {
			vt.newer(fmt.Sprintf("%d.0.0", i))
		}
	}
}
