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
