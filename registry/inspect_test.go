package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry/transport"
)

func testService(t *testing.T, opts ServiceOptions) *Service {
	t.Helper()
	s, err := newService(opts, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func linuxAmd64() ocispec.Platform { return ocispec.Platform{OS: "linux", Architecture: "amd64"} }

func TestInspectRoundTripBudgetTokenAuth(t *testing.T) {
	f := newFakeRegistry(t)
	f.tokenAuth = true
	_, cfg := f.addImage("team/app", "1.4", "linux", "amd64", "")
	f.addIndex("team/multi", "2.0", ocispec.Platform{OS: "linux", Architecture: "amd64"}, ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"})
	f.addImage("team/other", "v1", "linux", "amd64", "")
	s := testService(t, ServiceOptions{})
	ctx := context.Background()
	name := f.host() + "/team/app:1.4"

	img, err := s.Inspect(ctx, InspectRequest{Name: name, Platform: linuxAmd64()})
	if err != nil {
		t.Fatal(err)
	}
	// The cold host's challenge comes from the GET /v2/ sent beside the
	// scheme probe (endpoints.go), so the manifest is asked once, with a token.
	if got := f.reset(); len(got) > 4 || got[0] != "GET /v2/" || got[1] != "GET /token" || got[2] != "GET /v2/team/app/manifests/1.4" {
		t.Errorf("cold single-platform tag: %d requests, want ≤ 4 (ping, token, manifest, config): %v", len(got), got)
	}
	if string(img.ConfigBytes) != string(cfg) || img.Tag != "1.4" || img.Registry != f.host() || img.V1 {
		t.Errorf("unexpected image: tag %q registry %q config %s", img.Tag, img.Registry, img.ConfigBytes)
	}
	if img.Descriptor.Digest != img.Manifest.Digest || len(img.Layers) != 1 {
		t.Errorf("single-platform descriptor %v manifest %v layers %d", img.Descriptor.Digest, img.Manifest.Digest, len(img.Layers))
	}

	if _, err := s.Inspect(ctx, InspectRequest{Name: name, Platform: linuxAmd64()}); err != nil {
		t.Fatal(err)
	}
	if got := f.reset(); len(got) != 1 || !strings.HasPrefix(got[0], "HEAD ") {
		t.Errorf("warm unchanged tag: requests %v, want exactly one HEAD", got)
	}

	byDigest := f.host() + "/team/app@" + img.Descriptor.Digest.String()
	if _, err := s.Inspect(ctx, InspectRequest{Name: byDigest, Platform: linuxAmd64()}); err != nil {
		t.Fatal(err)
	}
	if got := f.reset(); len(got) != 0 {
		t.Errorf("cached digest reference: requests %v, want none", got)
	}

	if _, err := s.Inspect(ctx, InspectRequest{Name: f.host() + "/team/other:v1", Platform: linuxAmd64()}); err != nil {
		t.Fatal(err)
	}
	if got := f.reset(); len(got) > 3 || got[0] != "GET /token" {
		t.Errorf("new repository on a known registry: %d requests, want ≤ 3: %v", len(got), got)
	}

	s2 := testService(t, ServiceOptions{})
	mimg, err := s2.Inspect(ctx, InspectRequest{Name: f.host() + "/team/multi:2.0", Platform: ocispec.Platform{OS: "linux", Architecture: "arm64"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.reset(); len(got) > 5 || got[len(got)-1] == "GET /token" {
		t.Errorf("cold multi-platform tag: %d requests, want ≤ 5: %v", len(got), got)
	}
	if mimg.Index == nil || mimg.Manifest.Platform == nil || mimg.Manifest.Platform.Architecture != "arm64" || mimg.Descriptor.Digest == mimg.Manifest.Digest {
		t.Errorf("multi-platform: index %v manifest %+v", mimg.Index != nil, mimg.Manifest)
	}
	if !strings.Contains(string(mimg.ConfigBytes), `"arm64"`) {
		t.Errorf("config of the wrong platform: %s", mimg.ConfigBytes)
	}
}

func TestInspectTokenExpiryRefetchesOnlyTheToken(t *testing.T) {
	f := newFakeRegistry(t)
	f.tokenAuth = true
	f.expiresIn = 1 // with the 5 s margin: expired at once
	f.addImage("a/b", "t", "linux", "amd64", "")
	s := testService(t, ServiceOptions{})
	ctx := context.Background()
	req := InspectRequest{Name: f.host() + "/a/b:t", Platform: linuxAmd64()}
	if _, err := s.Inspect(ctx, req); err != nil {
		t.Fatal(err)
	}
	f.reset()
	if _, err := s.Inspect(ctx, req); err != nil {
		t.Fatal(err)
	}
	got := f.reset()
	if len(got) != 2 || got[0] != "GET /token" {
		t.Errorf("expired token: requests %v, want token then HEAD", got)
	}
}

func TestInspectConcurrentIdenticalShareOneFlight(t *testing.T) {
	f := newFakeRegistry(t)
	f.tokenAuth = true
	f.addImage("a/b", "t", "linux", "amd64", "")
	// The token request parks in the handler until released. A failed
	// wait below still releases it: srv.Close waits for its handlers.
	release := make(chan struct{})
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	atToken := make(chan struct{}, 1)
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/token" {
			select {
			case atToken <- struct{}{}:
			default:
			}
			<-release
		}
		return false
	}
	// A wait that ends here is a failure, not a slow machine: the flight
	// needs a ping and a token, milliseconds of work.
	const stuck = 30 * time.Second
	s := testService(t, ServiceOptions{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Inspect(context.Background(), InspectRequest{Name: f.host() + "/a/b:t", Platform: linuxAmd64()})
			errs <- err
		}()
	}
	// Wait until the flight is blocked on the token, then let it go.
	select {
	case <-atToken:
	case <-time.After(stuck):
		t.Fatalf("no token request within %s of 16 inspects; the registry saw %v", stuck, f.reset())
	}
	letGo()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(stuck):
		t.Fatalf("the 16 inspects had not returned %s after the token was let through", stuck)
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// A goroutine that arrives after the flight ended starts its own, which
	// finds the repository warm and only HEADs; so count what a second cold
	// flight would repeat: the token and the GET by tag. The challenge came
	// from the scheme probe's ping, once per host.
	counts := map[string]int{}
	for _, r := range f.reset() {
		counts[r]++
	}
	if counts["GET /token"] != 1 || counts["GET /v2/a/b/manifests/t"] != 1 || counts["GET /v2/"] != 1 {
		t.Errorf("16 concurrent identical inspects: %v, want one ping, one token and one GET", counts)
	}
}

func TestInspectNoTagTriesLatestThenFirstTag(t *testing.T) {
	f := newFakeRegistry(t)
	f.addImage("a/notlatest", "v2", "linux", "amd64", "")
	f.addImage("a/notlatest", "v1", "linux", "amd64", "")
	s := testService(t, ServiceOptions{})
	img, err := s.Inspect(context.Background(), InspectRequest{Name: f.host() + "/a/notlatest", Platform: linuxAmd64()})
	if err != nil {
		t.Fatal(err)
	}
	if img.Tag != "v1" {
		t.Errorf("tag %q, want the first listed (v1)", img.Tag)
	}
	_, err = s.Inspect(context.Background(), InspectRequest{Name: f.host() + "/a/notlatest:nope", Platform: linuxAmd64()})
	if !errdefs.IsNotFound(err) {
		t.Errorf("missing tag: %v, want NotFound", err)
	}
}

func TestInspectPlatformNotInIndex(t *testing.T) {
	f := newFakeRegistry(t)
	f.addIndex("m/x", "latest", ocispec.Platform{OS: "linux", Architecture: "amd64"})
	s := testService(t, ServiceOptions{})
	_, err := s.Inspect(context.Background(), InspectRequest{Name: f.host() + "/m/x", Platform: ocispec.Platform{OS: "linux", Architecture: "s390x"}})
	if !errdefs.IsNotFound(err) || !errors.Is(err, ErrNoMatchingPlatform) || !strings.Contains(err.Error(), "linux/amd64") || strings.Contains(err.Error(), "unknown/unknown") {
		t.Errorf("got %v, want NotFound (ErrNoMatchingPlatform) naming linux/amd64 and not the attestation", err)
	}
	pings := 0
	for _, r := range f.reset() {
		if r == "GET /v2/" {
			pings++ // the scheme probe's, once per host; a second is a fall-back
		}
		if pings > 1 || strings.Contains(r, "/tags/") {
			t.Errorf("a platform mismatch made %s: the image exists, nothing else to try", r)
		}
	}
}

func TestInspectHostileRegistries(t *testing.T) {
	ctx := context.Background()
	t.Run("oversized manifest", func(t *testing.T) {
		f := newFakeRegistry(t)
		big := fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"config":{"digest":"sha256:%064d","size":1},"layers":[],"annotations":{"pad":%q}}`,
			ocispec.MediaTypeImageManifest, 0, strings.Repeat("x", maxManifestSize))
		f.putManifest("h/big", "t", ocispec.MediaTypeImageManifest, []byte(big))
		_, err := testService(t, ServiceOptions{}).Inspect(ctx, InspectRequest{Name: f.host() + "/h/big:t", Platform: linuxAmd64()})
		if err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("got %v, want a size error", err)
		}
	})
	t.Run("Docker-Content-Digest disagrees with body", func(t *testing.T) {
		f := newFakeRegistry(t)
		f.addImage("h/lie", "t", "linux", "amd64", "")
		f.lieDigest = true
		_, err := testService(t, ServiceOptions{}).Inspect(ctx, InspectRequest{Name: f.host() + "/h/lie:t", Platform: linuxAmd64()})
		if !errors.Is(err, ErrDigestMismatch) || !errors.Is(err, ErrUpstream) {
			t.Errorf("got %v, want a digest mismatch (an upstream fault)", err)
		}
	})
	t.Run("manifest by digest with wrong body", func(t *testing.T) {
		f := newFakeRegistry(t)
		d, _ := f.addImage("h/swap", "t", "linux", "amd64", "")
		other, _ := f.addImage("h/swap", "u", "linux", "arm64", "")
		f.mu.Lock()
		f.manifests["h/swap"][d.Digest.String()] = f.manifests["h/swap"][other.Digest.String()]
		f.mu.Unlock()
		_, err := testService(t, ServiceOptions{}).Inspect(ctx, InspectRequest{Name: f.host() + "/h/swap@" + d.Digest.String(), Platform: linuxAmd64()})
		if !errors.Is(err, ErrDigestMismatch) {
			t.Errorf("got %v, want a digest mismatch", err)
		}
	})
	t.Run("HEAD 405 falls back to GET", func(t *testing.T) {
		f := newFakeRegistry(t)
		d, _ := f.addImage("h/nohead", "t", "linux", "amd64", "")
		f.headStatus = 405
		s := testService(t, ServiceOptions{})
		r := mustRepo(t, s, f.host()+"/h/nohead")
		got, err := r.Descriptor(ctx, "t")
		if err != nil || got.Digest != d.Digest {
			t.Errorf("Descriptor = %v, %v; want %s", got.Digest, err, d.Digest)
		}
	})
	t.Run("HEAD without digest falls back to GET", func(t *testing.T) {
		f := newFakeRegistry(t)
		d, _ := f.addImage("h/nodgst", "t", "linux", "amd64", "")
		f.omitHeadDgst = true
		r := mustRepo(t, testService(t, ServiceOptions{}), f.host()+"/h/nodgst")
		got, err := r.Descriptor(ctx, "t")
		if err != nil || got.Digest != d.Digest {
			t.Errorf("Descriptor = %v, %v; want %s", got.Digest, err, d.Digest)
		}
	})
	t.Run("both manifest and index", func(t *testing.T) {
		f := newFakeRegistry(t)
		body := fmt.Sprintf(`{"schemaVersion":2,"manifests":[],"config":{"digest":"sha256:%064d","size":1},"layers":[]}`, 0)
		f.putManifest("h/both", "t", ocispec.MediaTypeImageIndex, []byte(body))
		_, err := testService(t, ServiceOptions{}).Inspect(ctx, InspectRequest{Name: f.host() + "/h/both:t", Platform: linuxAmd64()})
		// The registry's fault (502), not the client's (400).
		if !errors.Is(err, ErrUpstream) || errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), f.host()) {
			t.Errorf("got %v, want ErrUpstream naming the registry", err)
		}
	})
	t.Run("media type contradicts body", func(t *testing.T) {
		f := newFakeRegistry(t)
		d, _ := f.addImage("h/ct", "", "linux", "amd64", "")
		f.mu.Lock()
		m := f.manifests["h/ct"][d.Digest.String()]
		m.mediaType = ocispec.MediaTypeImageIndex
		f.manifests["h/ct"]["t"] = m
		f.mu.Unlock()
		_, err := testService(t, ServiceOptions{}).Inspect(ctx, InspectRequest{Name: f.host() + "/h/ct:t", Platform: linuxAmd64()})
		if !errors.Is(err, ErrUpstream) || errdefs.IsInvalidArgument(err) {
			t.Errorf("got %v, want ErrUpstream", err)
		}
	})
	t.Run("429 with Retry-After is retried", func(t *testing.T) {
		f := newFakeRegistry(t)
		f.addImage("h/busy", "t", "linux", "amd64", "")
		var once sync.Once
		f.hook = func(w http.ResponseWriter, r *http.Request) bool {
			handled := false
			once.Do(func() {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				handled = true
			})
			return handled
		}
		if _, err := testService(t, ServiceOptions{}).Inspect(ctx, InspectRequest{Name: f.host() + "/h/busy:t", Platform: linuxAmd64()}); err != nil {
			t.Errorf("after one 429: %v", err)
		}
	})
	t.Run("5xx after retries is unavailable naming the host", func(t *testing.T) {
		f := newFakeRegistry(t)
		f.hook = func(w http.ResponseWriter, r *http.Request) bool {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		_, err := testService(t, ServiceOptions{}).Inspect(ctx, InspectRequest{Name: f.host() + "/h/down:t", Platform: linuxAmd64()})
		if !errdefs.IsUnavailable(err) || !strings.Contains(err.Error(), f.host()) {
			t.Errorf("got %v, want Unavailable naming %s", err, f.host())
		}
		// and the GET /v2/ sent beside the scheme probe, once
		if n := f.count(); n != transport.RetryAttempts+2 {
			t.Errorf("%d requests, want %d attempts and the probe's ping", n, transport.RetryAttempts+1)
		}
	})
	t.Run("connection refused is unavailable", func(t *testing.T) {
		f := newFakeRegistry(t)
		host := f.host()
		f.srv.Close()
		_, err := testService(t, ServiceOptions{}).Inspect(ctx, InspectRequest{Name: host + "/h/x:t", Platform: linuxAmd64()})
		if !errdefs.IsUnavailable(err) || !strings.Contains(err.Error(), host) {
			t.Errorf("got %v, want Unavailable naming %s", err, host)
		}
	})
	t.Run("wrong credentials are unauthenticated", func(t *testing.T) {
		f := newFakeRegistry(t)
		f.tokenAuth = true
		f.user, f.pass = "u", "p"
		f.addImage("h/priv", "t", "linux", "amd64", "")
		creds := Credentials{Auth: &registrytypes.AuthConfig{Username: "u", Password: "wrong", ServerAddress: f.host()}}
		_, err := testService(t, ServiceOptions{}).Inspect(ctx, InspectRequest{Name: f.host() + "/h/priv:t", Platform: linuxAmd64(), Credentials: creds})
		if !errdefs.IsUnauthorized(err) || !strings.Contains(err.Error(), "incorrect username or password") {
			t.Errorf("got %v, want Unauthenticated with the token server's reason", err)
		}
		creds.Auth.Password = "p"
		if _, err := testService(t, ServiceOptions{}).Inspect(ctx, InspectRequest{Name: f.host() + "/h/priv:t", Platform: linuxAmd64(), Credentials: creds}); err != nil {
			t.Errorf("right credentials: %v", err)
		}
	})
}

func mustRepo(t *testing.T, s *Service, name string) *Repository {
	t.Helper()
	n, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Repository(context.Background(), n, Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestInspectSchema1(t *testing.T) {
	f := newFakeRegistry(t)
	v1c := `{"id":"abc","architecture":"amd64","os":"linux","config":{"Labels":{"old":"yes"}}}`
	body, _ := json.Marshal(map[string]any{
		"schemaVersion": 1, "name": "old/img", "tag": "t", "architecture": "amd64",
		"fsLayers": []map[string]string{{"blobSum": digest.FromString("top").String()}, {"blobSum": digest.FromString("base").String()}},
		"history":  []map[string]string{{"v1Compatibility": v1c}, {"v1Compatibility": `{"id":"base"}`}},
	})
	f.putManifest("old/img", "t", imagespec.MediaTypeDockerSchema1, body)
	img, err := testService(t, ServiceOptions{}).Inspect(context.Background(), InspectRequest{Name: f.host() + "/old/img:t", Platform: linuxAmd64()})
	if err != nil {
		t.Fatal(err)
	}
	if !img.V1 || string(img.ConfigBytes) != v1c || len(img.Layers) != 2 || img.Layers[0].Digest != digest.FromString("base") {
		t.Errorf("schema1: V1 %v config %s layers %v", img.V1, img.ConfigBytes, img.Layers)
	}
}

func TestInspectV1OnlyRegistry(t *testing.T) {
	f := newFakeRegistry(t)
	f.v1Only = true
	id := strings.Repeat("ab", 32)
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/v1/_ping":
			w.Write([]byte("true"))
		case "/v1/repositories/legacy/app/images":
			if r.Header.Get("X-Docker-Token") != "true" {
				t.Errorf("images request without X-Docker-Token: true")
			}
			w.Header().Set("X-Docker-Token", "signature=abc")
			w.Header().Set("X-Docker-Endpoints", f.host())
			w.Write([]byte("[]"))
		case "/v1/repositories/legacy/app/tags":
			if r.Header.Get("Authorization") != "Token signature=abc" {
				t.Errorf("tags request Authorization %q", r.Header.Get("Authorization"))
			}
			fmt.Fprintf(w, `{"latest":%q}`, id)
		case "/v1/images/" + id + "/json":
			w.Write([]byte(`{"id":"` + id + `","os":"linux"}`))
		default:
			return false
		}
		return true
	}
	img, err := testService(t, ServiceOptions{}).Inspect(context.Background(), InspectRequest{Name: f.host() + "/legacy/app", Platform: linuxAmd64()})
	if err != nil {
		t.Fatal(err)
	}
	if !img.V1 || img.Tag != "latest" || !strings.Contains(string(img.ConfigBytes), id) {
		t.Errorf("v1: %+v", img)
	}
}

func TestInspectShortNameSearchesAdditionalRegistries(t *testing.T) {
	a, b := newFakeRegistry(t), newFakeRegistry(t)
	b.addImage("tools/app", "latest", "linux", "amd64", "")
	s := testService(t, ServiceOptions{AddRegistries: []string{a.host(), b.host()}})
	img, err := s.Inspect(context.Background(), InspectRequest{Name: "tools/app", Platform: linuxAmd64()})
	if err != nil {
		t.Fatal(err)
	}
	if img.Registry != b.host() || a.count() == 0 {
		t.Errorf("answered by %s (a saw %d requests), want %s after %s", img.Registry, a.count(), b.host(), a.host())
	}
}

func TestLoopbackRegistryMayUseLoopbackRealm(t *testing.T) {
	f := newFakeRegistry(t)
	f.tokenAuth = true
	f.realmBase = "http://localhost:" + f.srv.URL[strings.LastIndex(f.srv.URL, ":")+1:]
	f.addImage("a/b", "t", "linux", "amd64", "")
	if _, err := testService(t, ServiceOptions{}).Inspect(context.Background(), InspectRequest{Name: f.host() + "/a/b:t", Platform: linuxAmd64()}); err != nil {
		t.Errorf("127.0.0.1 registry with a localhost realm: %v", err)
	}
}

func TestRegistryThatDropsTokenAuthIsAskedAgain(t *testing.T) {
	f := newFakeRegistry(t)
	f.tokenAuth = true
	f.addImage("a/b", "t", "linux", "amd64", "")
	f.addImage("a/c", "t", "linux", "amd64", "")
	s := testService(t, ServiceOptions{})
	ctx := context.Background()
	if _, err := s.Inspect(ctx, InspectRequest{Name: f.host() + "/a/b:t", Platform: linuxAmd64()}); err != nil {
		t.Fatal(err)
	}
	// The registry restarts without auth and its token server is gone.
	f.mu.Lock()
	f.tokenAuth = false
	f.mu.Unlock()
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/token" {
			http.NotFound(w, r)
			return true
		}
		return false
	}
	_, _ = s.Inspect(ctx, InspectRequest{Name: f.host() + "/a/c:t", Platform: linuxAmd64()})
	if _, err := s.Inspect(ctx, InspectRequest{Name: f.host() + "/a/c:t", Platform: linuxAmd64()}); err != nil {
		t.Errorf("after the registry dropped token auth: %v", err)
	}
}
