package server

import (
	"net/url"
	"strings"
	"testing"
)

// The four prunes answer dockerd's empty reports, byte for byte, and refuse
// what dockerd refuses.
func TestPrunesOfObjectsWharfdHasNone(t *testing.T) {
	filters := func(f string) string { return "?filters=" + url.QueryEscape(f) }
	tests := []struct {
		path   string
		status int
		body   string
	}{
		{"/v1.50/containers/prune", 200, `{"ContainersDeleted":null,"SpaceReclaimed":0}`},
		{"/v1.50/containers/prune" + filters(`{"until":{"1h":true},"label":{"a=b":true},"label!":{"c":true}}`), 200, `{"ContainersDeleted":null,"SpaceReclaimed":0}`},
		{"/v1.50/containers/prune" + filters(`{"bogus":{"1":true}}`), 400, `{"message":"Invalid filter 'bogus'"}`},
		{"/v1.50/containers/prune" + filters(`not json`), 400, ""},
		{"/v1.50/networks/prune", 200, `{"NetworksDeleted":null}`},
		{"/v1.50/networks/prune" + filters(`{"dangling":{"true":true}}`), 400, `{"message":"Invalid filter 'dangling'"}`},
		{"/v1.50/volumes/prune", 200, `{"VolumesDeleted":null,"SpaceReclaimed":0}`},
		{"/v1.50/volumes/prune" + filters(`{"all":{"true":true}}`), 200, `{"VolumesDeleted":null,"SpaceReclaimed":0}`},
		{"/v1.50/volumes/prune" + filters(`{"all":{"maybe":true}}`), 400, `{"message":"invalid filter 'all=maybe': invalid value"}`},
		{"/v1.50/volumes/prune" + filters(`{"until":{"1h":true}}`), 400, `{"message":"Invalid filter 'until'"}`},
		{"/v1.50/build/prune", 200, `{"CachesDeleted":null,"SpaceReclaimed":0}`},
		{"/v1.50/build/prune?all=1&keep-storage=0&reserved-space=1000" + strings.Replace(filters(`{"until":{"24h":true}}`), "?", "&", 1), 200, `{"CachesDeleted":null,"SpaceReclaimed":0}`},
		{"/v1.50/build/prune?keep-storage=lots", 400, `{"message":"keep-storage is in bytes and expects an integer, got lots"}`},
		{"/containers/prune", 200, `{"ContainersDeleted":null,"SpaceReclaimed":0}`},
		{"/v1.22/containers/prune", 200, `{"ContainersDeleted":null,"SpaceReclaimed":0}`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			rec := do(t, &fakeBackend{}, "POST", tc.path, nil, nil)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if got := strings.TrimSpace(rec.Body.String()); tc.body != "" && got != tc.body {
				t.Errorf("body %s, want %s", got, tc.body)
			}
		})
	}
	if rec := do(t, &fakeBackend{}, "GET", "/v1.50/containers/prune", nil, nil); rec.Code != 404 {
		t.Errorf("GET prune: %d", rec.Code)
	}
}
