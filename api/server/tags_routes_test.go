package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/wharfproject/wharf/api/types"
)

// taggingBackend is a fakeBackend that also lists tags, recording what it
// was asked.
type taggingBackend struct {
	fakeBackend
	gotName string
	got     types.RemoteTagsOptions
	tags    []string
}

func (b *taggingBackend) RemoteTags(_ context.Context, name string, o types.RemoteTagsOptions) (*types.RemoteTags, error) {
	b.gotName, b.got = name, o
	return &types.RemoteTags{Registry: "localhost:5000", Name: name, Tags: b.tags}, nil
}

func TestRemoteTagsRoute(t *testing.T) {
	b := &taggingBackend{}
	auth := base64.URLEncoding.EncodeToString([]byte(`{"username":"u","password":"p","serveraddress":"localhost:5000"}`))
	rec := do(t, b, http.MethodGet, "/v1.50/wharf/images/localhost:5000/team/app/tags?limit=3&sort=semver&page-size=7", nil, map[string]string{"X-Registry-Auth": auth})
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if b.gotName != "localhost:5000/team/app" || b.got.Limit != 3 || b.got.Sort != "semver" || b.got.PageSize != 7 || b.got.Auth == nil || b.got.Auth.Username != "u" {
		t.Errorf("backend asked %q %+v", b.gotName, b.got)
	}
	// No tags is an empty list, never null.
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got["Tags"] == nil {
		t.Errorf("answer %s", rec.Body)
	}
	for _, q := range []string{"limit=-1", "limit=x", "page-size=1.5"} {
		rec := do(t, b, http.MethodGet, "/wharf/images/app/tags?"+q, nil, nil)
		if rec.Code != http.StatusBadRequest || message(t, rec) == "" {
			t.Errorf("%s: %d %s", q, rec.Code, rec.Body)
		}
	}
	if rec := do(t, &fakeBackend{}, http.MethodGet, "/wharf/images/app/tags", nil, nil); rec.Code != http.StatusNotImplemented {
		t.Errorf("without the backend: %d", rec.Code)
	}
}

func TestRemoteInspectReferrersQuery(t *testing.T) {
	var got []*types.ReferrersQuery
	b := &fakeBackend{lookupRemote: func(_ string, o types.RemoteInspectOptions) (*types.RemoteImageInspect, error) {
		got = append(got, o.Referrers)
		return &types.RemoteImageInspect{}, nil
	}}
	for _, q := range []string{"", "&referrers=0", "&referrers=1", "&referrers=1&artifactType=application%2Fspdx%2Bjson"} {
		if rec := do(t, b, http.MethodGet, "/v1.50/images/app/json?remote=1"+q, nil, nil); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", q, rec.Code, rec.Body)
		}
	}
	if got[0] != nil || got[1] != nil || got[2] == nil || got[2].ArtifactType != "" || got[3] == nil || got[3].ArtifactType != "application/spdx+json" {
		t.Errorf("referrers options: %+v %+v %+v %+v", got[0], got[1], got[2], got[3])
	}
}
