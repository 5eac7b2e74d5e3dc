package registry

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	registrytypes "github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// startTestRegistry starts the real registry through internal/testregistry,
// or skips when its binary is not built.
func startTestRegistry(t *testing.T, opts testregistry.Options) *testregistry.Registry {
	t.Helper()
	if root, err := testregistry.RepoRoot(); err != nil {
		t.Skip(err)
	} else if _, err := os.Stat(root + "/.cache/bin/registry"); err != nil && os.Getenv("WHARF_REGISTRY_BIN") == "" {
		t.Skip("distribution registry binary not built")
	}
	r, err := testregistry.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// TestRoundTripBudgetOnRealTokenRegistry counts at the real registry and
// its token server what DESIGN.md promises.
func TestRoundTripBudgetOnRealTokenRegistry(t *testing.T) {
	reg := startTestRegistry(t, testregistry.Options{Auth: testregistry.AuthToken})
	ctx := context.Background()
	img, err := testregistry.NewImage(testregistry.ImageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := testregistry.NewIndex(testregistry.IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := reg.Client()
	for _, repo := range []string{"budget/one", "budget/two"} {
		if err := c.PushImage(ctx, repo, "v1", img); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.PushIndex(ctx, "budget/multi", "v1", ix); err != nil {
		t.Fatal(err)
	}
	creds := Credentials{Auth: &registrytypes.AuthConfig{Username: reg.Username, Password: reg.Password, ServerAddress: reg.Host}}
	s := testService(t, ServiceOptions{})
	trips := func() int {
		n := reg.Counter.Total() + reg.TokenCounter.Total()
		reg.ResetCounters()
		return n
	}
	inspect := func(name string) *RemoteImage {
		t.Helper()
		ri, err := s.Inspect(ctx, InspectRequest{Name: reg.Host + "/" + name, Platform: linuxAmd64(), Credentials: creds})
		if err != nil {
			t.Fatal(err)
		}
		return ri
	}
	trips()
	ri := inspect("budget/one:v1")
	if n := trips(); n > 4 {
		t.Errorf("cold: %d trips, want ≤ 4", n)
	}
	inspect("budget/one:v1")
	if n := trips(); n != 1 {
		t.Errorf("warm unchanged tag: %d trips, want 1", n)
	}
	inspect("budget/one@" + ri.Descriptor.Digest.String())
	if n := trips(); n != 0 {
		t.Errorf("digest already seen: %d trips, want 0", n)
	}
	inspect("budget/two:v1")
	if n := trips(); n > 3 {
		t.Errorf("new repository on a known registry: %d trips, want ≤ 3", n)
	}
	s = testService(t, ServiceOptions{})
	if mi := inspect("budget/multi:v1"); mi.Index == nil {
		t.Errorf("multi-platform image without index")
	}
	if n := trips(); n > 5 {
		t.Errorf("cold multi-platform: %d trips, want ≤ 5", n)
	}

	tok, err := s.Login(ctx, &registrytypes.AuthConfig{Username: reg.Username, Password: reg.Password, ServerAddress: reg.Host})
	if err != nil || tok == "" {
		t.Errorf("login: identity token %q, %v", tok, err)
	}
	_, err = s.Login(ctx, &registrytypes.AuthConfig{Username: reg.Username, Password: "wrong", ServerAddress: reg.Host})
	if !errdefs.IsUnauthorized(err) {
		t.Errorf("wrong password: %v", err)
	}
	_, err = testService(t, ServiceOptions{}).Inspect(ctx, InspectRequest{Name: reg.Host + "/budget/one:v1", Platform: linuxAmd64()})
	if !errdefs.IsUnauthorized(err) || !strings.Contains(err.Error(), "authentication required") {
		t.Errorf("anonymous on a private registry: %v", err)
	}
	t.Logf("anonymous: %v", err)
}

func TestBasicAuthRealRegistry(t *testing.T) {
	reg := startTestRegistry(t, testregistry.Options{Auth: testregistry.AuthBasic})
	ctx := context.Background()
	img, err := testregistry.NewImage(testregistry.ImageOptions{Platform: ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Client().PushImage(ctx, "basic/app", "latest", img); err != nil {
		t.Fatal(err)
	}
	s := testService(t, ServiceOptions{})
	creds := Credentials{Auth: &registrytypes.AuthConfig{Username: reg.Username, Password: reg.Password, ServerAddress: "http://" + reg.Host + "/v2/"}}
	ri, err := s.Inspect(ctx, InspectRequest{Name: reg.Host + "/basic/app", Platform: ocispec.Platform{OS: "linux", Architecture: "arm64"}, Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	if ri.Tag != "latest" || ri.Config.Digest.String() != img.Config.Digest {
		t.Errorf("inspect: tag %q config %s, want latest %s", ri.Tag, ri.Config.Digest, img.Config.Digest)
	}
	if _, err := s.Login(ctx, creds.Auth); err != nil {
		t.Errorf("login: %v", err)
	}
	bad := *creds.Auth
	bad.Password = "nope"
	if _, err := s.Login(ctx, &bad); !errdefs.IsUnauthorized(err) {
		t.Errorf("wrong password: %v", err)
	}
	_, unauth := testService(t, ServiceOptions{}).Inspect(ctx, InspectRequest{Name: reg.Host + "/basic/app", Platform: linuxAmd64()})
	if !errdefs.IsUnauthorized(unauth) {
		t.Errorf("anonymous on basic auth: %v", unauth)
	}
}
