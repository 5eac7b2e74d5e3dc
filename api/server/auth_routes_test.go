package server

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
)

// Credentials on the routes: X-Registry-Auth on push (and its cap on every
// route that reads it), and POST /auth.

func TestPushAuth(t *testing.T) {
	var got types.PushOptions
	b := &fakeBackend{push: func(o types.PushOptions, out types.ProgressWriter) error {
		got = o
		return out.WriteMessage(jsonstream.Message{Status: "The push refers to repository [r/x]"})
	}}
	auth := base64.URLEncoding.EncodeToString([]byte(`{"username":"u","password":"p"}`))
	tests := []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
		msg    string
		user   string
	}{
		{"no header no body", nil, "", 400, "Bad parameters and missing X-Registry-Auth: EOF", ""},
		{"no header, {} body (Go SDK)", nil, "{}", 200, "", ""},
		{"header", map[string]string{"X-Registry-Auth": auth}, "", 200, "", "u"},
		{"bad header is anonymous", map[string]string{"X-Registry-Auth": "!!"}, "", 200, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got = types.PushOptions{}
			rec := do(t, b, "POST", "/v1.41/images/127.0.0.1:5000/imported2/push?tag=x", strings.NewReader(tc.body), tc.hdr)
			if rec.Code != tc.status {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			if tc.msg != "" && message(t, rec) != tc.msg {
				t.Errorf("message %q", message(t, rec))
			}
			if tc.status != 200 {
				return
			}
			user := ""
			if got.Auth != nil {
				user = got.Auth.Username
			}
			if user != tc.user || got.Repo.String() != "127.0.0.1:5000/imported2" || got.Tag != "x" {
				t.Errorf("opts %+v", got)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	var got *registry.AuthConfig
	b := &fakeBackend{login: func(a *registry.AuthConfig) (string, error) {
		got = a
		if a.Password != "testpass" {
			return "", fmt.Errorf("login attempt to http://r/v2/ failed with status: 401 Unauthorized%.0w", errdefs.ErrUnauthenticated)
		}
		return "tok", nil
	}}
	rec := do(t, b, "POST", "/v1.41/auth", strings.NewReader(`{"username":"testuser","password":"testpass","serveraddress":"r"}`), nil)
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"IdentityToken":"tok","Status":"Login Succeeded"}` || got.ServerAddress != "r" {
		t.Errorf("ok: %d %s", rec.Code, rec.Body)
	}
	rec = do(t, b, "POST", "/v1.41/auth", strings.NewReader(`{"username":"testuser","password":"wrong"}`), nil)
	if rec.Code != 401 {
		t.Errorf("wrong password: %d", rec.Code)
	}
	rec = do(t, b, "POST", "/v1.41/auth", strings.NewReader(`{"password":"`+strings.Repeat("x", maxJSONBody)+`"}`), nil)
	if rec.Code != 400 {
		t.Errorf("oversized body: %d", rec.Code)
	}
}

// X-Registry-Auth is capped at 64 KiB on every route that reads it: a
// larger header is a 400 naming the header, before the backend is called;
// one just under the cap still reaches the backend with its credentials.
func TestRegistryAuthHeaderCap(t *testing.T) {
	var calls int
	var gotUser string
	b := &fakeBackend{
		lookupRemote: func(_ string, o types.RemoteInspectOptions) (*types.RemoteImageInspect, error) {
			calls++
			if o.Auth != nil {
				gotUser = o.Auth.Username
			}
			return &types.RemoteImageInspect{ImageInspect: *sampleInspect()}, nil
		},
		push: func(o types.PushOptions, out types.ProgressWriter) error {
			calls++
			return nil
		},
		pull: func(o types.PullOptions, out types.ProgressWriter) error {
			calls++
			return nil
		},
		distribution: func(string, types.RemoteInspectOptions) (*registry.DistributionInspect, error) {
			calls++
			return &registry.DistributionInspect{}, nil
		},
	}
	withPassword := func(total int) string {
		// base64 of {"username":"u","password":"xxx…"} is 4/3 of the JSON.
		pw := strings.Repeat("x", total*3/4-len(`{"username":"u","password":""}`))
		h := base64.URLEncoding.EncodeToString([]byte(`{"username":"u","password":"` + pw + `"}`))
		return h[:len(h)-len(h)%4]
	}
	under, over := withPassword(maxAuthHeader-8), withPassword(maxAuthHeader+8)
	if len(under) > maxAuthHeader || len(over) <= maxAuthHeader {
		t.Fatalf("fixture sizes %d %d", len(under), len(over))
	}
	for _, route := range []struct{ method, path string }{
		{"GET", "/v1.50/images/x/json?remote=1"},
		{"POST", "/v1.50/images/create?fromImage=x&tag=1"},
		{"POST", "/v1.50/images/r.example/x/push?tag=1"},
		{"GET", "/v1.50/distribution/x/json"},
	} {
		calls = 0
		rec := do(t, b, route.method, route.path, nil, map[string]string{"X-Registry-Auth": over})
		if rec.Code != 400 || !strings.Contains(message(t, rec), "X-Registry-Auth header is") || !strings.Contains(message(t, rec), "larger than the 65536 allowed") {
			t.Errorf("%s %s with %d bytes: %d %s", route.method, route.path, len(over), rec.Code, rec.Body)
		}
		if calls != 0 {
			t.Errorf("%s %s: backend called with an oversized header", route.method, route.path)
		}
		rec = do(t, b, route.method, route.path, nil, map[string]string{"X-Registry-Auth": under})
		if rec.Code != 200 || calls != 1 {
			t.Errorf("%s %s with %d bytes: %d %s (calls %d)", route.method, route.path, len(under), rec.Code, rec.Body, calls)
		}
	}
	if gotUser != "u" {
		t.Errorf("credentials under the cap not passed on: %q", gotUser)
	}
}

// The push's name is parsed once, here: the backend gets the repository
// (a tag in the name dropped, as dockerd does), and a name that does not
// parse is a 400 that never reaches it.
func TestPushParsesTheNameOnce(t *testing.T) {
	var got []types.PushOptions
	b := &fakeBackend{push: func(o types.PushOptions, out types.ProgressWriter) error {
		got = append(got, o)
		return out.WriteMessage(jsonstream.Message{Status: "The push refers to repository [" + o.Repo.String() + "]"})
	}}
	for _, tc := range []struct {
		path, repo string
		status     int
	}{
		{"/v1.50/images/127.0.0.1:5000/app/push?tag=1", "127.0.0.1:5000/app", 200},
		{"/v1.50/images/127.0.0.1:5000/app:ignored/push?tag=1", "127.0.0.1:5000/app", 200},
		{"/v1.50/images/busybox/push", "docker.io/library/busybox", 200},
		{"/v1.50/images/UPPER/push?tag=1", "", 400},
	} {
		got = nil
		rec := do(t, b, "POST", tc.path, strings.NewReader("{}"), nil)
		if rec.Code != tc.status {
			t.Fatalf("%s: %d %s", tc.path, rec.Code, rec.Body)
		}
		if tc.status != 200 {
			if len(got) != 0 {
				t.Errorf("%s: refused, but the backend was called with %+v", tc.path, got)
			}
			continue
		}
		if len(got) != 1 || got[0].Repo.String() != tc.repo {
			t.Errorf("%s: backend got %+v, want the repository %s", tc.path, got, tc.repo)
		}
	}
}

// Pull, push and remote inspect take X-Registry-Config too: with it, the
// sets keyed by registry (and an X-Registry-Auth only when it names its
// registry); without it, X-Registry-Auth alone, as before.
func TestRequestCredentials(t *testing.T) {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.URLEncoding.EncodeToString(b) }
	cases := []struct {
		name     string
		config   string
		auth     string
		wantAuth string // Username of the one set
		wantKeys string // keys of the sets keyed by registry, sorted; "-" for none
		invalid  bool
	}{
		{"none", "", "", "", "-", false},
		{"auth alone", "", enc(registry.AuthConfig{Username: "sdk"}), "sdk", "-", false},
		{"config", enc(map[string]registry.AuthConfig{"a.example": {Username: "a"}}), "", "", "a.example", false},
		{"config drops an auth without server", enc(map[string]registry.AuthConfig{"a.example": {Username: "a"}}), enc(registry.AuthConfig{Username: "sdk"}), "", "a.example", false},
		{"config keeps an auth naming its server", enc(map[string]registry.AuthConfig{"a.example": {Username: "a"}}), enc(registry.AuthConfig{Username: "b", ServerAddress: "b.example"}), "", "a.example,b.example", false},
		{"empty config is anonymous everywhere", enc(map[string]registry.AuthConfig{}), enc(registry.AuthConfig{Username: "sdk"}), "", "", false},
		{"config garbage", "!!!", "", "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/images/create?fromImage=app", nil)
			if tc.config != "" {
				r.Header.Set(configHeader, tc.config)
			}
			if tc.auth != "" {
				r.Header.Set(authHeader, tc.auth)
			}
			a, m, err := requestCredentials(r, decodeAuth)
			if tc.invalid {
				if !errdefs.IsInvalidArgument(err) {
					t.Fatalf("err %v, want invalid argument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			user := ""
			if a != nil {
				user = a.Username
			}
			keys := "-"
			if m != nil {
				keys = strings.Join(slices.Sorted(maps.Keys(m)), ",")
			}
			if user != tc.wantAuth || keys != tc.wantKeys {
				t.Errorf("auth %q, keys %q; want %q, %q", user, keys, tc.wantAuth, tc.wantKeys)
			}
			if a != nil && m != nil {
				t.Errorf("both forms: the daemon would use one set where the client sent sets keyed by registry")
			}
		})
	}
}
