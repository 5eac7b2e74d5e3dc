package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

func do(t *testing.T, b Backend, method, path string, body io.Reader, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	h := New(b, Options{ServerVersion: "1.0-test", Logger: logrus.NewEntry(logrus.New())})
	req := httptest.NewRequest(method, path, body)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func message(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var e errorResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body %q is not JSON: %v", rec.Body.String(), err)
	}
	return e.Message
}

func TestVersionMiddleware(t *testing.T) {
	tests := []struct {
		path        string
		status      int
		msg         string
		contentType string
	}{
		{"/version", 200, "", "application/json"},
		{"/v1.50/version", 200, "", "application/json"},
		{"/v1.24/version", 200, "", "application/json"},
		{"/v1.41/version", 200, "", "application/json"},
		{"/v1.51/version", 200, "", "application/json"},
		{"/v1.55/version", 200, "", "application/json"},
		{"/v1.56/version", 400, "client version 1.56 is too new. Maximum supported API version is 1.55", "application/json"},
		{"/v1.100/version", 400, "client version 1.100 is too new. Maximum supported API version is 1.55", "application/json"},
		// Old clients that pin a version (skopeo 1.9: 1.22) are served, down
		// to dockerd 20.10's floor.
		{"/v1.23/version", 200, "", "application/json"},
		{"/v1.22/version", 200, "", "application/json"},
		{"/v1.12/version", 200, "", "application/json"},
		{"/v1.11/version", 400, "client version 1.11 is too old. Minimum supported API version is 1.12, please upgrade your client to a newer version", "text/plain; charset=utf-8"},
		{"/v1.1/version", 400, "client version 1.1 is too old. Minimum supported API version is 1.12, please upgrade your client to a newer version", "text/plain; charset=utf-8"},
		{"/vabc/version", 404, "page not found", "application/json"},
		{"/v1.41/nosuchthing", 404, "page not found", "application/json"},
		{"/nosuchthing", 404, "page not found", "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			rec := do(t, &fakeBackend{}, "GET", tc.path, nil, nil)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if got := rec.Header().Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			if rec.Header().Get("Api-Version") != "1.55" || rec.Header().Get("Ostype") != "linux" {
				t.Errorf("version headers missing: %v", rec.Header())
			}
			if got := rec.Header().Get("Server"); got != "Wharf/1.0-test (linux)" {
				t.Errorf("Server %q", got)
			}
			if tc.msg == "" {
				return
			}
			got := strings.TrimSpace(rec.Body.String())
			if strings.HasPrefix(tc.contentType, "application/json") {
				got = message(t, rec)
			}
			if got != tc.msg {
				t.Errorf("message %q, want %q", got, tc.msg)
			}
		})
	}
}

// An operator's minimum (wharfd --min-api-version) is the floor: below it
// dockerd's "too old" text, plain below 1.24 and JSON from it.
func TestMinAPIVersionIsConfigurable(t *testing.T) {
	h := New(&fakeBackend{}, Options{MinAPIVersion: "1.40", Logger: logrus.NewEntry(logrus.New())})
	for path, want := range map[string]int{"/v1.40/version": 200, "/v1.50/version": 200, "/v1.39/version": 400, "/v1.22/version": 400} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Errorf("%s: status %d, want %d: %s", path, rec.Code, want, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1.39/version", nil))
	if got := message(t, rec); got != "client version 1.39 is too old. Minimum supported API version is 1.40, please upgrade your client to a newer version" {
		t.Errorf("message %q", got)
	}
}

// Below 1.24 errors are plain text, as dockerd 20.10 sends them (its
// apiVersionSupportsJSONErrors), whatever the route.
func TestErrorsBelow124ArePlainText(t *testing.T) {
	b := &fakeBackend{inspect: func(n string, _ types.InspectOptions) (*types.ImageInspect, error) {
		return nil, fmt.Errorf("No such image: %s%.0w", n, errdefs.ErrNotFound)
	}}
	rec := do(t, b, "GET", "/v1.22/images/nosuch:1/json", nil, nil)
	if rec.Code != 404 || rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" || strings.TrimSpace(rec.Body.String()) != "No such image: nosuch:1" {
		t.Errorf("%d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	rec = do(t, b, "GET", "/v1.24/images/nosuch:1/json", nil, nil)
	if rec.Code != 404 || message(t, rec) != "No such image: nosuch:1" {
		t.Errorf("%d %q", rec.Code, rec.Body)
	}
}

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1.9", "1.10", -1}, {"1.50", "1.50", 0}, {"1.50.0", "1.50", 0},
		{"1.51", "1.50", 1}, {"2", "1.99", 1}, {"1.24", "1.3", 1},
	}
	for _, tc := range tests {
		if got := compareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestPing(t *testing.T) {
	for _, m := range []string{"GET", "HEAD"} {
		rec := do(t, &fakeBackend{}, m, "/_ping", nil, nil)
		if rec.Code != 200 {
			t.Fatalf("%s /_ping: %d", m, rec.Code)
		}
		for k, v := range map[string]string{
			"Api-Version":         "1.55",
			"Cache-Control":       "no-cache, no-store, must-revalidate",
			"Pragma":              "no-cache",
			"Docker-Experimental": "false",
			"Swarm":               "inactive",
			"Content-Type":        "text/plain; charset=utf-8",
		} {
			if got := rec.Header().Get(k); got != v {
				t.Errorf("%s /_ping %s = %q, want %q", m, k, got, v)
			}
		}
		want := "OK"
		if m == "HEAD" {
			want = ""
		}
		if rec.Body.String() != want {
			t.Errorf("%s /_ping body %q", m, rec.Body)
		}
	}
}

func TestErrorClassToStatus(t *testing.T) {
	tests := []struct {
		err    error
		status int
	}{
		{fmt.Errorf("No such image: x%.0w", errdefs.ErrNotFound), 404},
		{fmt.Errorf("bad%.0w", errdefs.ErrInvalidArgument), 400},
		{fmt.Errorf("conflict%.0w", errdefs.ErrConflict), 409},
		{fmt.Errorf("who%.0w", errdefs.ErrUnauthenticated), 401},
		{fmt.Errorf("blocked%.0w", errdefs.ErrPermissionDenied), 403},
		{fmt.Errorf("down%.0w", errdefs.ErrUnavailable), 503},
		{fmt.Errorf("later%.0w", errdefs.ErrNotImplemented), 501},
		{fmt.Errorf("wrapped: %w", fmt.Errorf("inner%.0w", errdefs.ErrNotFound)), 404},
		{errors.New("plain"), 500},
	}
	for _, tc := range tests {
		b := &fakeBackend{del: func(string, bool, bool) ([]image.DeleteResponse, error) { return nil, tc.err }}
		rec := do(t, b, "DELETE", "/v1.50/images/x", nil, nil)
		if rec.Code != tc.status {
			t.Errorf("%v: status %d, want %d", tc.err, rec.Code, tc.status)
		}
		if got := message(t, rec); got != tc.err.Error() {
			t.Errorf("message %q, want %q", got, tc.err.Error())
		}
	}
}

func TestContainersProbe(t *testing.T) {
	rec := do(t, &fakeBackend{}, "GET", "/v1.50/containers/json", nil, nil)
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Errorf("containers/json: %d %s", rec.Code, rec.Body)
	}
	rec = do(t, &fakeBackend{}, "GET", "/v1.50/containers/abc/json", nil, nil)
	if rec.Code != 404 || message(t, rec) != "No such container: abc" {
		t.Errorf("containers/abc/json: %d %s", rec.Code, rec.Body)
	}
}

func TestInfoLegacyFields(t *testing.T) {
	rec := do(t, &fakeBackend{}, "GET", "/v1.41/info", nil, nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"BridgeNfIptables":false`) || !strings.HasPrefix(rec.Body.String(), `{"ID":"fake"`) {
		t.Errorf("1.41 info: %d %s", rec.Code, rec.Body)
	}
	rec = do(t, &fakeBackend{}, "GET", "/v1.50/info", nil, nil)
	if rec.Code != 200 || strings.Contains(rec.Body.String(), "BridgeNf") {
		t.Errorf("1.50 info: %d %s", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "WharfRegistries") {
		t.Errorf("1.50 info without rate limits: %s", rec.Body)
	}
	rec = do(t, &fakeBackend{}, "GET", "/v1.50/images/search?term=x", nil, nil)
	if rec.Code != 501 {
		t.Errorf("search: %d", rec.Code)
	}
}

// /info's WharfRegistries comes after Docker's fields, which it leaves as
// they are, at old and new API versions alike.
func TestInfoWharfRegistriesAfterDockersFields(t *testing.T) {
	seen := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	b := &fakeBackend{registryStatus: []types.RegistryStatus{{Host: "r.example", RateLimit: &types.RateLimit{Limit: 100, Remaining: 76, Window: 21600, Host: "r.example", Seen: seen}}}}
	want := `,"WharfRegistries":[{"Host":"r.example","RateLimit":{"Limit":100,"Remaining":76,"Window":21600,"Host":"r.example","Seen":"2026-12-04T10:00:00Z"}}]}`
	for _, v := range []string{"1.41", "1.50"} {
		rec := do(t, b, "GET", "/v"+v+"/info", nil, nil)
		body := strings.TrimSpace(rec.Body.String())
		if rec.Code != 200 || !strings.HasPrefix(body, `{"ID":"fake"`) || !strings.HasSuffix(body, want) {
			t.Errorf("%s info: %d %s", v, rec.Code, body)
		}
	}
}
