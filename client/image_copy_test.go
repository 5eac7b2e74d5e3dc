package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestImageCopySendsBothRegistriesCredentialsAndOptions(t *testing.T) {
	r, c := newRecorder(t, 200, "application/json", "")
	auth := map[string]registry.AuthConfig{
		"src.example:5000": {Username: "s", Password: "p"},
		"dst.example":      {IdentityToken: "t"},
	}
	rc, err := c.ImageCopy(context.Background(), "src.example:5000/a:1", "dst.example/a:1", CopyOptions{
		Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, IncludeForeign: true, WithReferrers: true, Auth: auth,
	})
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if r.last.URL.Path != "/v"+c.version+"/wharf/images/copy" {
		t.Errorf("path %s", r.last.URL.Path)
	}
	q := r.last.URL.Query()
	if q.Get("src") != "src.example:5000/a:1" || q.Get("dst") != "dst.example/a:1" || q.Get("platform") != "linux/arm64/v8" ||
		q.Get("include-foreign") != "1" || q.Get("with-referrers") != "1" || q.Has("all-platforms") {
		t.Errorf("query %v", q)
	}
	b, err := base64.URLEncoding.DecodeString(r.last.Header.Get(ConfigHeader))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]registry.AuthConfig
	if err := json.Unmarshal(b, &got); err != nil || len(got) != 2 || got["src.example:5000"].Username != "s" || got["dst.example"].IdentityToken != "t" {
		t.Errorf("X-Registry-Config %s (%v)", b, err)
	}
	if r.last.Header.Get(AuthHeader) != "" {
		t.Error("copy sent X-Registry-Auth: credentials go per registry")
	}

	// Anonymous: no header at all.
	rc, err = c.ImageCopy(context.Background(), "a", "b", CopyOptions{AllPlatforms: true})
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if r.last.Header.Get(ConfigHeader) != "" || r.last.URL.Query().Get("all-platforms") != "1" || r.last.URL.Query().Has("with-referrers") {
		t.Errorf("anonymous copy: header %q, query %v", r.last.Header.Get(ConfigHeader), r.last.URL.Query())
	}
}
