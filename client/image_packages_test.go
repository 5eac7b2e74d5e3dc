package client

import (
	"context"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestImagePackagesQuery(t *testing.T) {
	r, c := newRecorder(t, 200, "application/json",
		`{"Image":"localhost:5000/app:1","Source":"databases","Packages":[{"Name":"bash","Version":"5.2","Type":"deb"}]}`)
	got, err := c.ImagePackages(context.Background(), "localhost:5000/app:1", PackagesOptions{Remote: true,
		Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"},
		Auth:     &registry.AuthConfig{Username: "u", Password: "p", ServerAddress: "localhost:5000"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(r.last.URL.Path, "/wharf/images/localhost:5000/app:1/packages") {
		t.Errorf("path %s", r.last.URL.Path)
	}
	q := r.last.URL.Query()
	if q.Get("remote") != "1" || !strings.Contains(q.Get("platform"), `"arm64"`) || r.last.Header.Get(AuthHeader) == "" {
		t.Errorf("query %v headers %v", q, r.last.Header)
	}
	if got.Source != "databases" || len(got.Packages) != 1 || got.Packages[0].Name != "bash" {
		t.Errorf("%+v", got)
	}
}
