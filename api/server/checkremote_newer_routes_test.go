package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/wharfproject/wharf/api/types"
)

// TestCheckRemoteRouteNewerAndBase: newer=1, base=1 and base-name=REF
// reach the backend; the lines carry the new fields; bad values are 400.
func TestCheckRemoteRouteNewerAndBase(t *testing.T) {
	b := &remoteCheckingBackend{results: []types.RemoteCheckResult{
		{Repository: "a", Tag: "1.25", RemoteStatus: types.RemoteCurrent, NewerMinor: "1.27", BaseStatus: types.BaseOutdated},
	}}
	rec := do(t, b, http.MethodPost, "/v1.50/wharf/images/check-remote?newer=1&base=1", nil, nil)
	if rec.Code != http.StatusOK || !b.got.Newer || !b.got.Base || b.got.BaseName != "" {
		t.Fatalf("%d %+v %s", rec.Code, b.got, rec.Body)
	}
	if body := rec.Body.String(); !strings.Contains(body, `"NewerMinor":"1.27"`) || !strings.Contains(body, `"BaseStatus":"outdated"`) {
		t.Fatalf("line %s", body)
	}
	b = &remoteCheckingBackend{}
	rec = do(t, b, http.MethodPost, "/wharf/images/check-remote?base-name=alpine:3.19", nil, nil)
	if rec.Code != http.StatusOK || !b.got.Base || b.got.BaseName != "alpine:3.19" || b.got.Newer {
		t.Fatalf("base-name: %d %+v", rec.Code, b.got)
	}
	b = &remoteCheckingBackend{}
	if rec = do(t, b, http.MethodPost, "/wharf/images/check-remote?newer=0", nil, nil); rec.Code != http.StatusOK || b.got.Newer {
		t.Fatalf("newer=0: %d %+v", rec.Code, b.got)
	}
	for _, q := range []string{"newer=maybe", "base=2", "base-name=UPPER/Case:x"} {
		if rec = do(t, &remoteCheckingBackend{}, http.MethodPost, "/wharf/images/check-remote?"+q, nil, nil); rec.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", q, rec.Code, rec.Body)
		}
	}
}
