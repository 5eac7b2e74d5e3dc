package registry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestRedirectToAnotherHostDropsAuthorization(t *testing.T) {
	var mu sync.Mutex
	var storageAuth []string
	storage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		storageAuth = append(storageAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Write([]byte("blob-bytes"))
	}))
	defer storage.Close()
	f := newFakeRegistry(t)
	f.basicAuth = true
	f.user, f.pass = "u", "p"
	desc := f.putBlob([]byte("blob-bytes"))
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "/blobs/sha256:") && r.Method == http.MethodGet {
			if _, _, ok := r.BasicAuth(); !ok {
				return false // let the registry challenge
			}
			http.Redirect(w, r, storage.URL+"/data", http.StatusTemporaryRedirect)
			return true
		}
		return false
	}
	s := testService(t, ServiceOptions{})
	n, _ := reference.ParseNormalizedNamed(f.host() + "/a/b")
	r, err := s.Repository(context.Background(), n, Credentials{Auth: &registrytypes.AuthConfig{Username: "u", Password: "p", ServerAddress: f.host()}})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := r.FetchBlob(context.Background(), desc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(b) != "blob-bytes" {
		t.Fatalf("blob %q, %v", b, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(storageAuth) == 0 {
		t.Fatal("redirect not followed")
	}
	for _, a := range storageAuth {
		if a != "" {
			t.Errorf("storage host received Authorization %q", a)
		}
	}
}

func TestRedirectHTTPSToHTTPRefused(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("plain HTTP server reached after a downgrade")
	}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/v2/x", http.StatusFound)
	}))
	defer tlsSrv.Close()
	s := testService(t, ServiceOptions{Transport: tlsSrv.Client().Transport})
	req, _ := http.NewRequest(http.MethodGet, tlsSrv.URL+"/v2/", nil)
	req.Header.Set("Authorization", "Basic c2VjcmV0")
	resp, err := s.client.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("https→http redirect was followed")
	}
	if !strings.Contains(err.Error(), "downgrade") {
		t.Errorf("error %v, want a downgrade refusal", err)
	}
}

func TestBlobReaderVerifies(t *testing.T) {
	f := newFakeRegistry(t)
	good := f.putBlob([]byte("0123456789"))
	s := testService(t, ServiceOptions{})
	r := mustRepo(t, s, f.host()+"/a/b")
	ctx := context.Background()

	f.mu.Lock()
	f.blobs[good.Digest] = []byte("012345678X") // same size, other bytes
	f.mu.Unlock()
	rc, err := r.FetchBlob(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	// It says which digest it checks: the store relies on that to skip its
	// own hash (WriteBlob with store.Verified).
	if v, ok := rc.(interface{ VerifiedDigest() digest.Digest }); !ok || v.VerifiedDigest() != good.Digest {
		t.Errorf("FetchBlob's reader does not say it verifies %s", good.Digest)
	}
	_, err = io.ReadAll(rc)
	rc.Close()
	if !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("tampered blob: read error %v, want a digest mismatch", err)
	}

	// A reader that never reports EOF cleanly on a short body.
	short := ocispec.Descriptor{Digest: digest.FromString("0123456789"), Size: 10}
	vr := newVerifyingReader(strings.NewReader("01234"), short, "h")
	if _, err := io.ReadAll(vr); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short body: %v, want unexpected EOF", err)
	}
	long := newVerifyingReader(strings.NewReader("0123456789!"), short, "h")
	if _, err := io.ReadAll(long); err == nil {
		t.Errorf("long body accepted")
	}
	ok := newVerifyingReader(strings.NewReader("0123456789"), short, "h")
	if b, err := io.ReadAll(ok); err != nil || string(b) != "0123456789" {
		t.Errorf("good body: %q %v", b, err)
	}
	if _, err := r.FetchBlob(ctx, ocispec.Descriptor{Digest: "sha256:../../etc", Size: 1}); !errdefs.IsInvalidArgument(err) {
		t.Errorf("invalid digest: %v, want InvalidArgument before any request", err)
	}
}

func TestLogin(t *testing.T) {
	ctx := context.Background()
	t.Run("basic", func(t *testing.T) {
		f := newFakeRegistry(t)
		f.basicAuth = true
		f.user, f.pass = "u", "p"
		s := testService(t, ServiceOptions{})
		if tok, err := s.Login(ctx, &registrytypes.AuthConfig{Username: "u", Password: "p", ServerAddress: f.host()}); err != nil || tok != "" {
			t.Errorf("good credentials: %q %v", tok, err)
		}
		_, err := s.Login(ctx, &registrytypes.AuthConfig{Username: "u", Password: "x", ServerAddress: "http://" + f.host() + "/v2/"})
		if !errdefs.IsUnauthorized(err) || !strings.Contains(err.Error(), "authentication required") {
			t.Errorf("wrong credentials: %v, want Unauthenticated with the registry's reason", err)
		}
	})
	t.Run("token", func(t *testing.T) {
		f := newFakeRegistry(t)
		f.tokenAuth = true
		f.user, f.pass = "u", "p"
		s := testService(t, ServiceOptions{})
		tok, err := s.Login(ctx, &registrytypes.AuthConfig{Username: "u", Password: "p", ServerAddress: f.host()})
		if err != nil || !strings.HasPrefix(tok, "refresh-") {
			t.Errorf("good credentials: identity token %q, %v", tok, err)
		}
		_, err = s.Login(ctx, &registrytypes.AuthConfig{Username: "u", Password: "x", ServerAddress: f.host()})
		if !errdefs.IsUnauthorized(err) || !strings.Contains(err.Error(), "incorrect username or password") {
			t.Errorf("wrong credentials: %v", err)
		}
		if _, err := s.Login(ctx, &registrytypes.AuthConfig{IdentityToken: tok, ServerAddress: f.host()}); err != nil {
			t.Errorf("identity token login: %v", err)
		}
		if _, err := s.Login(ctx, &registrytypes.AuthConfig{IdentityToken: "stolen", ServerAddress: f.host()}); !errdefs.IsUnauthorized(err) {
			t.Errorf("bad identity token: %v", err)
		}
		// The identity token also works for pulls (OAuth2 refresh grant).
		f.addImage("id/img", "t", "linux", "amd64", "")
		creds := Credentials{Auth: &registrytypes.AuthConfig{IdentityToken: tok, ServerAddress: f.host()}}
		if _, err := testService(t, ServiceOptions{}).Inspect(ctx, InspectRequest{Name: f.host() + "/id/img:t", Platform: linuxAmd64(), Credentials: creds}); err != nil {
			t.Errorf("inspect with identity token: %v", err)
		}
	})
	t.Run("blocked", func(t *testing.T) {
		s := testService(t, ServiceOptions{BlockRegistries: []string{"quay.io"}})
		if _, err := s.Login(ctx, &registrytypes.AuthConfig{ServerAddress: "quay.io"}); !errdefs.IsPermissionDenied(err) {
			t.Errorf("blocked: %v", err)
		}
	})
}

func TestPushMountTagsAndExists(t *testing.T) {
	f := newFakeRegistry(t)
	f.tokenAuth = true
	s := testService(t, ServiceOptions{})
	ctx := context.Background()
	r := mustRepo(t, s, f.host()+"/push/dst")

	blob := []byte("some layer")
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	if ok, err := r.BlobExists(ctx, desc); err != nil || ok {
		t.Fatalf("exists before push: %v %v", ok, err)
	}
	if how, _, err := r.TransferBlob(ctx, desc, nil, opener(blob)); err != nil || how != BlobUploaded {
		t.Fatalf("push: %v %v", how, err)
	}
	if ok, err := r.BlobExists(ctx, desc); err != nil || !ok {
		t.Fatalf("exists after push: %v %v", ok, err)
	}
	if how, _, err := r.TransferBlob(ctx, desc, []string{"push/src"}, nil); err != nil || how != BlobExisted {
		t.Errorf("transfer of a known blob: %v %v, want BlobExisted", how, err)
	}
	f.refuseMount = true
	other := []byte("other layer")
	odesc := ocispec.Descriptor{Digest: digest.FromBytes(other), Size: int64(len(other))}
	if how, _, err := r.TransferBlob(ctx, odesc, []string{"push/src"}, opener(other)); err != nil || how != BlobUploaded {
		t.Errorf("refused mount: %v err %v, want an upload", how, err)
	}
	if ok, _ := r.BlobExists(ctx, odesc); !ok {
		t.Errorf("fallback upload did not land")
	}

	cfg := []byte(`{"os":"linux","architecture":"amd64"}`)
	cdesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))}
	if _, _, err := r.TransferBlob(ctx, cdesc, nil, opener(cfg)); err != nil {
		t.Fatal(err)
	}
	m := []byte(`{"schemaVersion":2,"mediaType":"` + ocispec.MediaTypeImageManifest + `","config":{"mediaType":"` + ocispec.MediaTypeImageConfig + `","digest":"` + cdesc.Digest.String() + `","size":` + itoa(len(cfg)) + `},"layers":[]}`)
	mdesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(m), Size: int64(len(m))}
	for _, tag := range []string{"t1", "t2", "t3"} {
		if err := r.PushManifest(ctx, mdesc, m, tag); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.PushManifest(ctx, mdesc, append(m, ' '), "bad"); !errdefs.IsInvalidArgument(err) {
		t.Errorf("mismatched manifest push: %v", err)
	}
	f.tagsPerPage = 2
	tags, err := r.Tags(ctx, TagsOptions{})
	if err != nil || strings.Join(tags, ",") != "t1,t2,t3" {
		t.Errorf("tags %v %v", tags, err)
	}
	f.reset()
	img, err := s.Inspect(ctx, InspectRequest{Name: f.host() + "/push/dst:t2", Platform: linuxAmd64()})
	if err != nil || img.Descriptor.Digest != mdesc.Digest {
		t.Fatalf("inspect after push: %v", err)
	}
	if got := f.reset(); len(got) != 2 {
		t.Errorf("inspect right after push: %v, want HEAD + config", got)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestMirrorServesDockerHubNamesWithoutHubCredentials(t *testing.T) {
	m := newFakeRegistry(t)
	m.addImage("library/busybox", "latest", "linux", "amd64", "")
	var sawAuth bool
	m.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "" {
			sawAuth = true
		}
		return false
	}
	s := testService(t, ServiceOptions{Mirrors: []string{"http://" + m.host()}})
	creds := Credentials{Auth: &registrytypes.AuthConfig{Username: "hub", Password: "secret", ServerAddress: IndexServerAddress}}
	img, err := s.Inspect(context.Background(), InspectRequest{Name: "busybox", Platform: linuxAmd64(), Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	if img.Registry != "docker.io" || img.Name.String() != "docker.io/library/busybox" || img.Tag != "latest" {
		t.Errorf("mirror answer: registry %s name %s tag %s", img.Registry, img.Name, img.Tag)
	}
	if sawAuth {
		t.Errorf("Docker Hub credentials were sent to the mirror")
	}
}

func TestLoginRefusesMetadataRealm(t *testing.T) {
	f := newFakeRegistry(t)
	f.tokenAuth = true
	f.realmBase = "http://169.254.169.254"
	_, err := testService(t, ServiceOptions{}).Login(context.Background(), &registrytypes.AuthConfig{Username: "u", Password: "p", ServerAddress: f.host()})
	if !errdefs.IsPermissionDenied(err) {
		t.Errorf("realm on the metadata address: %v, want PermissionDenied", err)
	}
}
