package server

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/wharfproject/wharf/api/types"
)

func TestPullCostRoute(t *testing.T) {
	var gotName string
	var got types.PullCostOptions
	want := &types.PullCost{Image: "localhost:5000/team/app:2", Digest: "sha256:aa", Layers: []types.DiffLayer{{Digest: "sha256:bb", Size: 10}}, Bytes: 12, Present: 2, TotalLayers: 3, ConfigSize: 2}
	b := &fakeBackend{pullCost: func(n string, o types.PullCostOptions) (*types.PullCost, error) {
		gotName, got = n, o
		return want, nil
	}}
	auth := base64.URLEncoding.EncodeToString([]byte(`{"username":"u","password":"p","serveraddress":"localhost:5000"}`))
	rec := do(t, b, http.MethodGet, `/v1.50/wharf/images/localhost:5000/team/app:2/pull-cost?platform={"os":"linux","architecture":"arm64"}`,
		nil, map[string]string{"X-Registry-Auth": auth, "X-Meta-Trace": "t1"})
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if gotName != "localhost:5000/team/app:2" || got.Platform == nil || got.Platform.Architecture != "arm64" ||
		got.Auth == nil || got.Auth.Username != "u" || got.MetaHeaders.Get("X-Meta-Trace") != "t1" {
		t.Errorf("backend asked %q %+v", gotName, got)
	}
	var ans types.PullCost
	if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Bytes != 12 || ans.Present != 2 || len(ans.Layers) != 1 || ans.Layers[0] != want.Layers[0] || ans.TotalLayers != 3 {
		t.Errorf("answer %+v", ans)
	}
}

func TestPullCostRouteRefusesBadInput(t *testing.T) {
	for _, tc := range []struct{ name, url string }{
		{"a path for a platform", `/wharf/images/app:1/pull-cost?platform={"os":"../../etc","architecture":"amd64"}`},
		{"platform not JSON", `/wharf/images/app:1/pull-cost?platform=linux/amd64`},
		{"two platforms", `/wharf/images/app:1/pull-cost?platform={"os":"linux","architecture":"amd64"}&platform={"os":"linux","architecture":"arm64"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			b := &fakeBackend{pullCost: func(string, types.PullCostOptions) (*types.PullCost, error) {
				called = true
				return &types.PullCost{}, nil
			}}
			rec := do(t, b, http.MethodGet, tc.url, nil, nil)
			if rec.Code != http.StatusBadRequest || called {
				t.Errorf("%d (backend called: %v) %s", rec.Code, called, rec.Body)
			}
		})
	}
}

func TestPullCostRouteMissingImage(t *testing.T) {
	b := &fakeBackend{pullCost: func(n string, _ types.PullCostOptions) (*types.PullCost, error) {
		return nil, types.NoSuchImage(n)
	}}
	rec := do(t, b, http.MethodGet, "/wharf/images/app:9/pull-cost", nil, nil)
	if rec.Code != http.StatusNotFound {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}
