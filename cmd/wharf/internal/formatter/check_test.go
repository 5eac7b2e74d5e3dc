package formatter

import (
	"testing"

	"github.com/wharfproject/wharf/api/types"
)

func TestNewerAndBaseColumns(t *testing.T) {
	for _, tc := range []struct {
		r           types.RemoteCheckResult
		newer, base string
	}{
		{types.RemoteCheckResult{}, "-", "-"},
		{types.RemoteCheckResult{NewerPatch: "1.25.4", NewerMajor: "2.0.0", BaseStatus: types.BaseCurrent}, "1.25.4, 2.0.0", "current"},
		{types.RemoteCheckResult{NewerError: "listing: down", BaseStatus: types.BaseOutdated, BaseName: "alpine:3.19"}, "error", "outdated (alpine:3.19)"},
		{types.RemoteCheckResult{BaseStatus: types.BaseUnknown}, "-", "unknown"},
	} {
		if got := newerColumn(tc.r); got != tc.newer {
			t.Errorf("newer %+v: %q, want %q", tc.r, got, tc.newer)
		}
		if got := baseColumn(tc.r); got != tc.base {
			t.Errorf("base %+v: %q, want %q", tc.r, got, tc.base)
		}
	}
}

func TestChangesColumn(t *testing.T) {
	f := false
	for _, tc := range []struct {
		name string
		in   *types.DiffSummary
		want string
	}{
		{"nothing to compare", nil, "-"},
		{"one package", &types.DiffSummary{PackagesChanged: []types.PackageChange{{Name: "libfoo", From: "1.0-1", To: "1.0-2"}}, PackageChanges: 1, FilesChanged: 1, PullBytes: 2100000, PullLayers: 1},
			"libfoo 1.0-1→1.0-2; 1 file; 2.1MB to pull"},
		{"many, a new signer, a link", &types.DiffSummary{
			PackagesChanged: []types.PackageChange{{Name: "a", From: "1", To: "2"}, {Name: "b", From: "1", To: "2"}},
			PackagesAdded:   []string{"c@1", "d@1"}, PackagesRemoved: []string{"e@1"}, PackageChanges: 5,
			FilesChanged: 12, PullBytes: 512, SameSigner: &f, CompareURL: "https://example.com/o/r/compare/a...b"},
			"a 1→2, b 1→2, +c@1 (+2 more); 12 files; 512B to pull; signer changed; https://example.com/o/r/compare/a...b"},
		{"the diff failed", &types.DiffSummary{Error: "diff: not implemented"}, "error: diff: not implemented"},
		{"the same image", &types.DiffSummary{}, "0 files; 0B to pull"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ChangesColumn(tc.in); got != tc.want {
				t.Errorf("%q\nwant %q", got, tc.want)
			}
		})
	}
}
