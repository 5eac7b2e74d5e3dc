package registry

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
	registrytypes "github.com/moby/moby/api/types/registry"
)

// TestCachedDigestAnswersOnlyItsScope: a digest read in one repository is
// not served from the cache to another repository, another registry, or
// another identity without the registry saying so (issue 10, finding 1).
func TestCachedDigestAnswersOnlyItsScope(t *testing.T) {
	ctx := context.Background()
	f := newFakeRegistry(t)
	f.basicAuth, f.user, f.pass = true, "u", "p"
	d, _ := f.addImage("team/private", "1", "linux", "amd64", "")
	s := testService(t, ServiceOptions{})
	creds := Credentials{Auth: &registrytypes.AuthConfig{Username: "u", Password: "p", ServerAddress: f.host()}}
	byDigest := func(repo string) string { return f.host() + "/" + repo + "@" + d.Digest.String() }

	if _, err := s.Inspect(ctx, InspectRequest{Name: byDigest("team/private"), Platform: linuxAmd64(), Credentials: creds}); err != nil {
		t.Fatal(err)
	}
	f.reset()
	if _, err := s.Inspect(ctx, InspectRequest{Name: byDigest("team/private"), Platform: linuxAmd64(), Credentials: creds}); err != nil {
		t.Fatal(err)
	}
	if got := f.reset(); len(got) != 0 {
		t.Errorf("same repository, same identity: %v, want no request", got)
	}

	cases := []struct {
		name  string
		req   InspectRequest
		class func(error) bool
	}{
		{"another repository", InspectRequest{Name: byDigest("nobody/nothing"), Credentials: creds}, errdefs.IsNotFound},
		{"no credentials", InspectRequest{Name: byDigest("team/private")}, errdefs.IsUnauthorized},
		{"another registry", InspectRequest{Name: "127.0.0.1:1/any/thing@" + d.Digest.String(), Credentials: creds}, errdefs.IsUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Platform = linuxAmd64()
			img, err := s.Inspect(ctx, tc.req)
			if err == nil || !tc.class(err) {
				t.Fatalf("got %v (image %v), want the registry's refusal", err, img != nil)
			}
		})
	}
}

// TestCachedDigestInAnotherRepositoryCostsOneRequest: where the registry
// does hold the digest, another repository is answered after one HEAD.
func TestCachedDigestInAnotherRepositoryCostsOneRequest(t *testing.T) {
	ctx := context.Background()
	f := newFakeRegistry(t)
	d, _ := f.addImage("a/one", "1", "linux", "amd64", "")
	f.mu.Lock()
	m := f.manifests["a/one"][d.Digest.String()]
	f.mu.Unlock()
	f.putManifest("b/two", d.Digest.String(), m.mediaType, m.body)
	s := testService(t, ServiceOptions{})
	if _, err := s.Inspect(ctx, InspectRequest{Name: f.host() + "/a/one@" + d.Digest.String(), Platform: linuxAmd64()}); err != nil {
		t.Fatal(err)
	}
	f.reset()
	if _, err := s.Inspect(ctx, InspectRequest{Name: f.host() + "/b/two@" + d.Digest.String(), Platform: linuxAmd64()}); err != nil {
		t.Fatal(err)
	}
	if got := f.reset(); len(got) != 1 || !strings.HasPrefix(got[0], "HEAD /v2/b/two/manifests/") {
		t.Errorf("another repository holding the digest: %v, want one HEAD", got)
	}
}

// TestEmptyServerAddressBindsToTheFirstCandidate: credentials without a
// serveraddress (the Docker Go SDK's default) reach the first registry a
// short name is searched on and never another one, even one that asks for
// credentials (issue 10, finding 2).
func TestEmptyServerAddressBindsToTheFirstCandidate(t *testing.T) {
	ctx := context.Background()
	a := newFakeRegistry(t) // first candidate: has nothing
	b := newFakeRegistry(t) // second: has the image, behind the same user name
	b.addImage("app", "latest", "linux", "amd64", "")
	for _, f := range []*fakeRegistry{a, b} {
		f.basicAuth, f.user, f.pass = true, "u", "p"
	}
	var sawAuth []string
	b.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if h := r.Header.Get("Authorization"); h != "" {
			sawAuth = append(sawAuth, r.Method+" "+r.URL.Path)
		}
		return false
	}
	var aAuth int
	a.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "" {
			aAuth++
		}
		return false
	}
	s := testService(t, ServiceOptions{AddRegistries: []string{a.host(), b.host()}})
	creds := Credentials{Auth: &registrytypes.AuthConfig{Username: "u", Password: "p"}}
	_, err := s.Inspect(ctx, InspectRequest{Name: "app", Platform: linuxAmd64(), Credentials: creds})
	if err == nil || !errors.Is(err, ErrUnauthorized) {
		t.Errorf("inspect: %v, want the second registry's refusal of an anonymous request", err)
	}
	if len(sawAuth) != 0 {
		t.Errorf("the second registry received credentials bound to the first: %v", sawAuth)
	}
	if aAuth == 0 {
		t.Errorf("the first registry never received the credentials bound to it")
	}
	// With its serveraddress, the same set goes to the second registry only
	// (the first, now open, says "not found" to an anonymous request).
	sawAuth, aAuth = nil, 0
	a.mu.Lock()
	a.basicAuth = false
	a.mu.Unlock()
	creds.Auth.ServerAddress = b.host()
	img, err := s.Inspect(ctx, InspectRequest{Name: "app", Platform: linuxAmd64(), Credentials: creds})
	if err != nil || img.Registry != b.host() {
		t.Fatalf("inspect with serveraddress: %v", err)
	}
	if aAuth != 0 || len(sawAuth) == 0 {
		t.Errorf("credentials for %s: first registry got them %d times, second %d", b.host(), aAuth, len(sawAuth))
	}
}

// TestShortNameStopsAtARefusal: only "not found" moves a short name on; a
// registry that refuses the request is the answer (issue 10, finding 3).
func TestShortNameStopsAtARefusal(t *testing.T) {
	ctx := context.Background()
	private := newFakeRegistry(t)
	private.basicAuth, private.user, private.pass = true, "u", "p"
	public := newFakeRegistry(t)
	public.addImage("app", "latest", "linux", "amd64", "")
	s := testService(t, ServiceOptions{AddRegistries: []string{private.host(), public.host()}})
	_, err := s.Inspect(ctx, InspectRequest{Name: "app", Platform: linuxAmd64()})
	if err == nil || !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("inspect: %v, want the private registry's refusal", err)
	}
	_, err = findImage(ctx, s, "app", Credentials{})
	if err == nil || !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("resolve (pull): %v, want the same refusal", err)
	}
	if n := public.count(); n != 0 {
		t.Errorf("the next registry was asked %d times", n)
	}
}

// TestRegistriesMapGivesEachCandidateItsOwnSet: credentials keyed by
// registry (X-Registry-Config of a pull, a push or a remote inspect) give
// each candidate of a short name the set keyed by it, and no other.
func TestRegistriesMapGivesEachCandidateItsOwnSet(t *testing.T) {
	ctx := context.Background()
	a := newFakeRegistry(t) // first candidate: has nothing
	b := newFakeRegistry(t) // second: has the image
	b.addImage("app", "latest", "linux", "amd64", "")
	a.basicAuth, a.user, a.pass = true, "u", "pass-of-a"
	b.basicAuth, b.user, b.pass = true, "u", "pass-of-b"
	var mu sync.Mutex
	seen := map[*fakeRegistry][]string{}
	for _, f := range []*fakeRegistry{a, b} {
		f.hook = func(w http.ResponseWriter, r *http.Request) bool {
			if u, p, ok := r.BasicAuth(); ok {
				mu.Lock()
				seen[f] = append(seen[f], u+":"+p)
				mu.Unlock()
			}
			return false
		}
	}
	s := testService(t, ServiceOptions{AddRegistries: []string{a.host(), b.host()}})
	creds := Credentials{Registries: map[string]registrytypes.AuthConfig{
		a.host(): {Username: "u", Password: "pass-of-a"},
		b.host(): {Username: "u", Password: "pass-of-b"},
	}}
	img, err := s.Inspect(ctx, InspectRequest{Name: "app", Platform: linuxAmd64(), Credentials: creds})
	if err != nil || img.Registry != b.host() {
		t.Fatalf("inspect: %v, want the image from the second candidate with its own set", err)
	}
	for f, want := range map[*fakeRegistry]string{a: "u:pass-of-a", b: "u:pass-of-b"} {
		if len(seen[f]) == 0 {
			t.Errorf("%s never received its own set", f.host())
		}
		for _, got := range seen[f] {
			if got != want {
				t.Errorf("%s received %q, want only %q", f.host(), got, want)
			}
		}
	}
}

// TestRemoteImageRepositoryIsTheOneBound: what reads more about an answer
// (the signature verdict) reads through RemoteImage.Repository, the
// repository the search bound: a short name found at a later candidate
// with one set bound to the first reads its signatures anonymously too.
func TestRemoteImageRepositoryIsTheOneBound(t *testing.T) {
	ctx := context.Background()
	a := newFakeRegistry(t) // first candidate: has nothing, and takes the set
	b := newFakeRegistry(t) // second: has the image, open to anyone
	b.addImage("app", "latest", "linux", "amd64", "")
	a.basicAuth, a.user, a.pass = true, "u", "p"
	var (
		mu     sync.Mutex
		leaked []string
	)
	b.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "" {
			mu.Lock()
			leaked = append(leaked, r.Method+" "+r.URL.String())
			mu.Unlock()
		}
		return false
	}
	s := testService(t, ServiceOptions{AddRegistries: []string{a.host(), b.host()}})
	creds := Credentials{Auth: &registrytypes.AuthConfig{Username: "u", Password: "p"}}
	img, err := s.Inspect(ctx, InspectRequest{Name: "app", Platform: linuxAmd64(), Credentials: creds})
	if err != nil || img.Registry != b.host() {
		t.Fatalf("inspect: %v", err)
	}
	repo := img.Repository()
	if repo == nil {
		t.Fatal("the answer carries no repository")
	}
	if got := repo.Info().Index.Name; got != b.host() {
		t.Errorf("repository of %s, want the one that answered, %s", got, b.host())
	}
	before := b.count()
	_, _ = repo.Signatures(ctx, img.Descriptor.Digest)
	if b.count() == before {
		t.Fatal("the signatures were not asked for at the registry that answered")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) != 0 {
		t.Errorf("the registry that answered received the credentials bound to the first candidate: %v", leaked)
	}
}
