package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
)

// remoteCheckingBackend is a fakeBackend with the update check.
type remoteCheckingBackend struct {
	fakeBackend
	got     types.RemoteCheckOptions
	results []types.RemoteCheckResult
	after   error // returned after the results
}

func (b *remoteCheckingBackend) CheckRemote(_ context.Context, opts types.RemoteCheckOptions, emit func(types.RemoteCheckResult) error) error {
	b.got = opts
	for _, r := range b.results {
		if err := emit(r); err != nil {
			return err
		}
	}
	return b.after
}

func TestCheckRemoteRouteStreamsLines(t *testing.T) {
	b := &remoteCheckingBackend{results: []types.RemoteCheckResult{
		{Repository: "a", Tag: "1", RemoteStatus: types.RemoteCurrent},
		{Repository: "b", Tag: "2", RemoteStatus: types.RemoteError, RemoteError: "registry b: down"},
	}}
	cfg, _ := json.Marshal(map[string]registry.AuthConfig{"r.example": {Username: "u", Password: "p"}})
	rec := do(t, b, http.MethodPost, "/v1.50/wharf/images/check-remote?name=a&name=b&max-age=90s", nil, map[string]string{
		"X-Registry-Config": base64.URLEncoding.EncodeToString(cfg),
	})
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%d %s %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	lines := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], `"RemoteError":"registry b: down"`) {
		t.Fatalf("lines %q", lines)
	}
	if strings.Join(b.got.Names, ",") != "a,b" || b.got.MaxAge != 90*time.Second {
		t.Fatalf("options %+v", b.got)
	}
	if len(b.got.Auth) != 1 || b.got.Auth["r.example"].Username != "u" {
		t.Fatalf("auth %+v", b.got.Auth)
	}
}

func TestCheckRemoteRouteErrors(t *testing.T) {
	// Before the stream: an ordinary error answer.
	b := &remoteCheckingBackend{after: fmt.Errorf("No such image: x%.0w", errdefs.ErrNotFound)}
	rec := do(t, b, http.MethodPost, "/wharf/images/check-remote?name=x", nil, nil)
	if rec.Code != http.StatusNotFound || message(t, rec) != "No such image: x" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	// After it began: a last {"message"} line.
	b = &remoteCheckingBackend{results: []types.RemoteCheckResult{{Repository: "a", Tag: "1", RemoteStatus: types.RemoteLocal}}, after: context.Canceled}
	rec = do(t, b, http.MethodPost, "/wharf/images/check-remote", nil, nil)
	if rec.Code != http.StatusOK || !strings.HasSuffix(rec.Body.String(), `{"message":"context canceled"}`+"\n") {
		t.Fatalf("%d %q", rec.Code, rec.Body)
	}
	// Nothing to check: an empty stream.
	rec = do(t, &remoteCheckingBackend{}, http.MethodPost, "/wharf/images/check-remote", nil, nil)
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Fatalf("%d %q", rec.Code, rec.Body)
	}
	for _, q := range []string{"max-age=soon", "max-age=-1s"} {
		rec = do(t, &remoteCheckingBackend{}, http.MethodPost, "/wharf/images/check-remote?"+q, nil, nil)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", q, rec.Code, rec.Body)
		}
	}
	rec = do(t, &fakeBackend{}, http.MethodPost, "/wharf/images/check-remote", nil, nil)
	if rec.Code != http.StatusNotImplemented {
		t.Fatalf("no backend: %d %s", rec.Code, rec.Body)
	}
}

// TestDecodeAuthConfigsBindsEachToItsRegistry: X-Registry-Config entries
// are keyed by their registry (registry/credentials.go binds each to its key);
// X-Registry-Auth counts only when it names its registry; a header that
// does not decode is a 400, never an anonymous check.
func TestDecodeAuthConfigsBindsEachToItsRegistry(t *testing.T) {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.URLEncoding.EncodeToString(b) }
	cases := []struct {
		name     string
		config   string
		auth     string
		wantKeys []string
		invalid  bool
	}{
		{"none", "", "", nil, false},
		{"config", enc(map[string]registry.AuthConfig{"a.example": {Username: "u", ServerAddress: "elsewhere"}}), "", []string{"a.example"}, false},
		{"auth naming its server", "", enc(registry.AuthConfig{Username: "u", ServerAddress: "b.example"}), []string{"b.example"}, false},
		{"auth without server", "", enc(registry.AuthConfig{Username: "u"}), nil, false},
		{"config wins over auth", enc(map[string]registry.AuthConfig{"b.example": {Username: "c"}}), enc(registry.AuthConfig{Username: "a", ServerAddress: "b.example"}), []string{"b.example"}, false},
		{"config garbage", "!!!", "", nil, true},
		{"config not a map", enc([]int{1}), "", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/wharf/images/check-remote", nil)
			if tc.config != "" {
				r.Header.Set(configHeader, tc.config)
			}
			if tc.auth != "" {
				r.Header.Set(authHeader, tc.auth)
			}
			got, err := decodeAuthConfigs(r)
			if tc.invalid {
				if !errdefs.IsInvalidArgument(err) {
					t.Fatalf("err %v, want invalid argument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for k := range got {
				keys = append(keys, k)
			}
			if strings.Join(keys, ",") != strings.Join(tc.wantKeys, ",") {
				t.Fatalf("keys %q, want %q", keys, tc.wantKeys)
			}
			if tc.name == "config wins over auth" && got["b.example"].Username != "c" {
				t.Fatalf("X-Registry-Auth replaced the X-Registry-Config entry: %+v", got)
			}
		})
	}
	r := httptest.NewRequest(http.MethodPost, "/wharf/images/check-remote", nil)
	r.Header.Set(configHeader, strings.Repeat("A", maxAuthHeader+1))
	if _, err := decodeAuthConfigs(r); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("oversized header: %v", err)
	}
}
