package server

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
)

// GET /images/json?identity=1 (API 1.54): passed on only from 1.54, and
// only with manifests=1 (dockerd's "conflicting options").
func TestImageListIdentityGate(t *testing.T) {
	var got types.ImageListOptions
	b := &fakeBackend{images: func(o types.ImageListOptions) ([]image.Summary, error) {
		got = o
		return []image.Summary{{ID: "sha256:aa"}}, nil
	}}
	tests := []struct {
		path         string
		code         int
		wantIdentity bool
	}{
		{"/v1.53/images/json?identity=1&manifests=1", 200, false},
		{"/v1.53/images/json?identity=1", 200, false},
		{"/v1.54/images/json?identity=1", 400, false},
		{"/v1.54/images/json?identity=1&manifests=1", 200, true},
		{"/v1.55/images/json?identity=0&manifests=1", 200, false},
		{"/v1.55/images/json?identity=true&manifests=true", 200, true},
	}
	for _, tc := range tests {
		got = types.ImageListOptions{}
		rec := do(t, b, "GET", tc.path, nil, nil)
		if rec.Code != tc.code {
			t.Errorf("%s: %d %s", tc.path, rec.Code, rec.Body)
			continue
		}
		if tc.code == 400 && message(t, rec) != "conflicting options: identity requires manifests=1" {
			t.Errorf("%s: %q", tc.path, message(t, rec))
		}
		if got.Identity != tc.wantIdentity {
			t.Errorf("%s: Identity %v, want %v", tc.path, got.Identity, tc.wantIdentity)
		}
	}
}

// GET /system/df from API 1.52: the usage objects, with the legacy fields
// before them unless verbose=1; below 1.52 the legacy shape only.
func TestDiskUsage152(t *testing.T) {
	du := &types.DiskUsage{LayersSize: 300, Images: []image.Summary{
		{ID: "sha256:a", Size: 200, SharedSize: 50},
		{ID: "sha256:b", Size: 100, SharedSize: -1},
	}, Containers: []struct{}{}, Volumes: []struct{}{}, BuildCache: []struct{}{}}
	b := &diskBackend{du: du}
	type usage struct {
		TotalCount, TotalSize, Reclaimable, ActiveCount int64
		Items                                           []json.RawMessage
	}
	for _, tc := range []struct {
		path           string
		legacy, usages bool
	}{
		{"/v1.50/system/df", true, false},
		{"/v1.51/system/df", true, false},
		{"/v1.52/system/df", true, true},
		{"/v1.55/system/df", true, true},
		{"/v1.55/system/df?verbose=1", false, true},
	} {
		rec := do(t, b, "GET", tc.path, nil, nil)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", tc.path, rec.Code, rec.Body)
		}
		m := decodeObject(t, rec.Body.Bytes())
		for _, k := range []string{"LayersSize", "Images", "Containers", "Volumes", "BuildCache"} {
			if _, ok := m[k]; ok != tc.legacy {
				t.Errorf("%s: legacy %s present %v: %s", tc.path, k, ok, rec.Body)
			}
		}
		for _, k := range []string{"ContainerUsage", "VolumeUsage", "BuildCacheUsage"} {
			if v, ok := m[k]; ok != tc.usages || (ok && string(v) != "{}") {
				t.Errorf("%s: %s = %s", tc.path, k, v)
			}
		}
		if !tc.usages {
			if _, ok := m["ImageUsage"]; ok {
				t.Errorf("%s: ImageUsage below 1.52", tc.path)
			}
			continue
		}
		var iu usage
		if err := json.Unmarshal(m["ImageUsage"], &iu); err != nil {
			t.Fatal(err)
		}
		if iu.TotalCount != 2 || iu.TotalSize != 300 || iu.Reclaimable != 150 || iu.ActiveCount != 0 || len(iu.Items) != 2 {
			t.Errorf("%s: ImageUsage %+v", tc.path, iu)
		}
	}
}

// diskBackend is fakeBackend with a given /system/df answer.
type diskBackend struct {
	fakeBackend
	du *types.DiskUsage
}

func (d *diskBackend) SystemDiskUsage(context.Context) (*types.DiskUsage, error) { return d.du, nil }

// Image inspect's Config from API 1.52 omits the keys that are not set
// (moby's legacyConfigFields end at "v1.50-v1.51"); below, they are null
// or "".
func TestInspectConfigOmitsUnsetFrom152(t *testing.T) {
	insp := sampleInspect()
	insp.Config.Cmd, insp.Config.Entrypoint, insp.Config.Env, insp.Config.Labels = nil, nil, nil, nil
	insp.Config.User, insp.Config.WorkingDir, insp.Config.Volumes, insp.Config.OnBuild = "", "", nil, nil
	b := &fakeBackend{inspect: func(string, types.InspectOptions) (*types.ImageInspect, error) { return insp, nil }}
	for _, v := range []string{"1.45", "1.50", "1.51", "1.52", "1.55"} {
		rec := do(t, b, "GET", "/v"+v+"/images/busybox/json", nil, nil)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", v, rec.Code, rec.Body)
		}
		cfg := decodeObject(t, decodeObject(t, rec.Body.Bytes())["Config"])
		for _, k := range []string{"Cmd", "Entrypoint", "Env", "Labels", "OnBuild", "User", "Volumes", "WorkingDir"} {
			if _, ok := cfg[k]; ok != versionLess(v, "1.52") {
				t.Errorf("%s: Config.%s present %v", v, k, ok)
			}
		}
	}
}

func TestDiskUsage152Types(t *testing.T) {
	b := &diskBackend{du: &types.DiskUsage{LayersSize: 1, Images: []image.Summary{}}}
	rec := do(t, b, "GET", "/v1.55/system/df?type=image&verbose=1", nil, nil)
	m := decodeObject(t, rec.Body.Bytes())
	if _, ok := m["ImageUsage"]; !ok || len(m) != 1 {
		t.Errorf("type=image: %s", rec.Body)
	}
	rec = do(t, b, "GET", "/v1.55/system/df?type=volume&type=container", nil, nil)
	m = decodeObject(t, rec.Body.Bytes())
	if _, ok := m["ImageUsage"]; ok || string(m["VolumeUsage"]) != "{}" || string(m["Containers"]) != "[]" {
		t.Errorf("type=volume&type=container: %s", rec.Body)
	}
	rec = do(t, b, "GET", "/v1.55/system/df?type=nope", nil, nil)
	if rec.Code != 400 || message(t, rec) != "unknown object type: nope" {
		t.Errorf("type=nope: %d %s", rec.Code, rec.Body)
	}
}
