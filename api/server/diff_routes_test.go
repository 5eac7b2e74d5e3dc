package server

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/wharfproject/wharf/api/types"
)

func TestImageDiffRoute(t *testing.T) {
	var got types.DiffRequest
	b := &fakeBackend{diff: func(req types.DiffRequest) (*types.ImageDiff, error) {
		got = req
		return &types.ImageDiff{From: types.DiffImage{Kind: req.From.Kind, Name: req.From.Name}, Config: &types.ConfigDiff{}}, nil
	}}
	auth := base64.URLEncoding.EncodeToString([]byte(`{"username":"u","password":"p","serveraddress":"localhost:5000"}`))
	rec := do(t, b, http.MethodGet, `/v1.50/wharf/images/diff?from=app:1&to=local:app:2&sections=config,files&sections=pull&remote=1&platform={"os":"linux","architecture":"arm64"}`,
		nil, map[string]string{"X-Registry-Auth": auth})
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	want := types.DiffRequest{From: types.DiffSide{Kind: "remote", Name: "app:1"}, To: types.DiffSide{Kind: "local", Name: "app:2"}, Sections: []string{"config", "files", "pull"}}
	if got.From != want.From || got.To != want.To || !reflect.DeepEqual(got.Sections, want.Sections) ||
		got.Platform == nil || got.Platform.Architecture != "arm64" || got.Auth == nil || got.Auth.Username != "u" {
		t.Errorf("backend asked %+v", got)
	}
	var d map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if _, ok := d["Config"]; !ok {
		t.Errorf("answer %s lacks its section", rec.Body)
	}
	if _, ok := d["Files"]; ok {
		t.Errorf("answer %s holds a section not built", rec.Body)
	}
}

func TestImageDiffRouteRefusesBadParameters(t *testing.T) {
	b := &fakeBackend{diff: func(types.DiffRequest) (*types.ImageDiff, error) { return &types.ImageDiff{}, nil }}
	for _, q := range []string{
		"to=b",
		"from=a",
		"from=a&to=remote:",
		"from=a&to=b&sections=config,nope",
		"from=a%00&to=b",
	} {
		if rec := do(t, b, http.MethodGet, "/wharf/images/diff?"+q, nil, nil); rec.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", q, rec.Code, rec.Body)
		}
	}
}

func TestParseDiffSide(t *testing.T) {
	for _, tc := range []struct {
		in     string
		remote bool
		want   types.DiffSide
	}{
		{"alpine", false, types.DiffSide{Kind: "local", Name: "alpine"}},
		{"alpine", true, types.DiffSide{Kind: "remote", Name: "alpine"}},
		{"local:alpine", true, types.DiffSide{Kind: "local", Name: "alpine"}},
		{"remote:localhost:5000/a:1", false, types.DiffSide{Kind: "remote", Name: "localhost:5000/a:1"}},
		{"localhost:5000/a:1", false, types.DiffSide{Kind: "local", Name: "localhost:5000/a:1"}},
		{"archive:/tmp/a.tar", false, types.DiffSide{Kind: "archive", Name: "/tmp/a.tar"}},
	} {
		got, err := types.ParseDiffSide(tc.in, tc.remote)
		if err != nil || got != tc.want {
			t.Errorf("ParseDiffSide(%q, %v) = %+v, %v; want %+v", tc.in, tc.remote, got, err, tc.want)
		}
	}
}
