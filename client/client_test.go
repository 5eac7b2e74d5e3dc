package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// recorder is an httptest server that records the last request and answers
// with a fixed status, content type and body.
type recorder struct {
	srv     *httptest.Server
	last    *http.Request
	body    []byte
	status  int
	ctype   string
	answer  string
	headers http.Header
}

func newRecorder(t *testing.T, status int, ctype, answer string) (*recorder, *Client) {
	t.Helper()
	r := &recorder{status: status, ctype: ctype, answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.last = req
		r.body, _ = io.ReadAll(req.Body)
		for k, v := range r.headers {
			w.Header()[k] = v
		}
		if r.ctype != "" {
			w.Header().Set("Content-Type", r.ctype)
		}
		w.WriteHeader(r.status)
		_, _ = io.WriteString(w, r.answer)
	}))
	t.Cleanup(r.srv.Close)
	c, err := New("tcp://" + strings.TrimPrefix(r.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return r, c
}

func TestErrorDecoding(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		ctype    string
		body     string
		wantMsg  string
		wantNF   bool
		wantKind error
	}{
		{"json 404", 404, "application/json", `{"message":"No such image: nosuch:latest"}`, "No such image: nosuch:latest", true, errdefs.ErrNotFound},
		{"json 409", 409, "application/json", `{"message":"conflict: unable to delete a3e3b447a0a2 (must be forced)"}`, "conflict: unable to delete a3e3b447a0a2 (must be forced)", false, errdefs.ErrConflict},
		{"json 400", 400, "application/json", `{"message":"Invalid filter 'bogus'"}`, "Invalid filter 'bogus'", false, errdefs.ErrInvalidArgument},
		{"text 404", 404, "text/plain", "Not Found\n", "Not Found", true, errdefs.ErrNotFound},
		{"empty 500", 500, "", "", "500 Internal Server Error", false, errdefs.ErrUnknown},
		{"podman extra fields", 404, "application/json", `{"cause":"x","message":"no such image","response":404}`, "no such image", true, errdefs.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := newRecorder(t, tt.status, tt.ctype, tt.body)
			_, _, err := c.ImageInspect(context.Background(), "nosuch", InspectOptions{})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not *Error", err, err)
			}
			if e.Message != tt.wantMsg || e.StatusCode != tt.status {
				t.Errorf("got %d %q, want %d %q", e.StatusCode, e.Message, tt.status, tt.wantMsg)
			}
			if IsNotFound(err) != tt.wantNF {
				t.Errorf("IsNotFound = %v", IsNotFound(err))
			}
			if !errors.Is(err, tt.wantKind) {
				t.Errorf("errors.Is(err, %v) = false", tt.wantKind)
			}
			if err.Error() != "Error response from daemon: "+tt.wantMsg {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

func TestVersionedPaths(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		call      func(c *Client) error
		wantPath  string
		wantQuery string
		method    string
	}{
		{"ping unversioned", func(c *Client) error { _, err := c.Ping(ctx); return err }, "/_ping", "", "GET"},
		{"version", func(c *Client) error { _, err := c.Version(ctx); return err }, "/v1.55/version", "", "GET"},
		{"inspect with slash and port", func(c *Client) error {
			_, _, err := c.ImageInspect(ctx, "127.0.0.1:5000/tiny:1.0", InspectOptions{})
			return err
		}, "/v1.55/images/127.0.0.1:5000/tiny:1.0/json", "", "GET"},
		{"inspect digest", func(c *Client) error {
			_, _, err := c.ImageInspect(ctx, "tiny@sha256:abc", InspectOptions{})
			return err
		}, "/v1.55/images/tiny@sha256:abc/json", "", "GET"},
		{"list", func(c *Client) error {
			_, err := c.ImageList(ctx, ImageListOptions{All: true, Digests: true})
			return err
		}, "/v1.55/images/json", "all=1&digests=1", "GET"},
		{"history", func(c *Client) error { _, err := c.ImageHistory(ctx, "a/b:c"); return err }, "/v1.55/images/a/b:c/history", "", "GET"},
		{"attestations", func(c *Client) error {
			_, _, err := c.ImageAttestations(ctx, "127.0.0.1:5000/app:1", AttestationsOptions{
				Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"}, PredicateTypes: []string{"https://spdx.dev/Document", "https://slsa.dev/provenance/v0.2"},
				Statement: true, Remote: true})
			return err
		}, "/v1.55/images/127.0.0.1:5000/app:1/attestations",
			"platform=%7B%22architecture%22%3A%22arm64%22%2C%22os%22%3A%22linux%22%7D&remote=1&statement=1&type=https%3A%2F%2Fspdx.dev%2FDocument&type=https%3A%2F%2Fslsa.dev%2Fprovenance%2Fv0.2", "GET"},
		{"tag", func(c *Client) error { return c.ImageTag(ctx, "src", "127.0.0.1:5000/x", "1") }, "/v1.55/images/src/tag", "repo=127.0.0.1%3A5000%2Fx&tag=1", "POST"},
		{"rmi", func(c *Client) error {
			_, err := c.ImageRemove(ctx, "x", ImageRemoveOptions{Force: true, NoPrune: true})
			return err
		}, "/v1.55/images/x", "force=1&noprune=1", "DELETE"},
		{"save", func(c *Client) error {
			rc, err := c.ImageSave(ctx, []string{"a", "b:1"})
			if rc != nil {
				rc.Close()
			}
			return err
		}, "/v1.55/images/get", "names=a&names=b%3A1", "GET"},
		{"pull platform plain string", func(c *Client) error {
			rc, err := c.ImagePull(ctx, "docker.io/library/alpine", PullOptions{Tag: "latest", Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}})
			if rc != nil {
				rc.Close()
			}
			return err
		}, "/v1.55/images/create", "fromImage=docker.io%2Flibrary%2Falpine&platform=linux%2Farm64%2Fv8&tag=latest", "POST"},
		{"import", func(c *Client) error {
			rc, err := c.ImageImport(ctx, strings.NewReader("tar"), ImportOptions{Ref: "r/n:t", Changes: []string{"ENV A=1", "CMD [\"sh\"]"}, Message: "m"})
			if rc != nil {
				rc.Close()
			}
			return err
		}, "/v1.55/images/create", "changes=ENV+A%3D1&changes=CMD+%5B%22sh%22%5D&fromSrc=-&message=m&repo=r%2Fn%3At", "POST"},
		{"load quiet", func(c *Client) error {
			rc, err := c.ImageLoad(ctx, strings.NewReader("tar"), true)
			if rc != nil {
				rc.Close()
			}
			return err
		}, "/v1.55/images/load", "quiet=1", "POST"},
		{"push", func(c *Client) error {
			rc, err := c.ImagePush(ctx, "127.0.0.1:5000/x", PushOptions{Tag: "1"})
			if rc != nil {
				rc.Close()
			}
			return err
		}, "/v1.55/images/127.0.0.1:5000/x/push", "tag=1", "POST"},
		{"events", func(c *Client) error {
			rc, err := c.Events(ctx, EventsOptions{Since: "1", Until: "2"})
			if rc != nil {
				rc.Close()
			}
			return err
		}, "/v1.55/events", "since=1&until=2", "GET"},
		{"distribution", func(c *Client) error {
			_, err := c.DistributionInspect(ctx, "a/b:1", nil)
			return err
		}, "/v1.55/distribution/a/b:1/json", "", "GET"},
		{"container", func(c *Client) error { _, err := c.ContainerInspect(ctx, "x"); return err }, "/v1.55/containers/x/json", "", "GET"},
		{"auth", func(c *Client) error { _, err := c.Login(ctx, registry.AuthConfig{Username: "u"}); return err }, "/v1.55/auth", "", "POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, c := newRecorder(t, 200, "application/json", "{}")
			if strings.Contains(tt.wantPath, "images/json") || strings.Contains(tt.wantPath, "history") || strings.Contains(tt.wantPath, "attestations") || tt.method == "DELETE" {
				r.answer = "[]"
			}
			if err := tt.call(c); err != nil {
				t.Fatal(err)
			}
			if r.last.Method != tt.method {
				t.Errorf("method %s, want %s", r.last.Method, tt.method)
			}
			if got := r.last.URL.EscapedPath(); got != tt.wantPath {
				t.Errorf("path %s, want %s", got, tt.wantPath)
			}
			if got := r.last.URL.RawQuery; got != tt.wantQuery {
				t.Errorf("query %s, want %s", got, tt.wantQuery)
			}
		})
	}
}

func decodeAuthHeader(t *testing.T, v string) registry.AuthConfig {
	t.Helper()
	b, err := base64.URLEncoding.DecodeString(v)
	if err != nil {
		t.Fatalf("X-Registry-Auth %q is not base64url: %v", v, err)
	}
	var a registry.AuthConfig
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("X-Registry-Auth is not JSON: %v", err)
	}
	return a
}

func TestRemoteInspectSendsAuthPlatformAndRemote(t *testing.T) {
	r, c := newRecorder(t, 200, "application/json", `{"Id":"sha256:1","Registry":"localhost:5000","Digest":"sha256:2","Tag":"1.0","RepoTags":[],"RepoDigests":[]}`)
	// A password with characters that differ between base64 and base64url.
	auth := &registry.AuthConfig{Username: "u", Password: "p>>?~~", ServerAddress: "localhost:5000"}
	v, raw, err := c.ImageInspectRemote(context.Background(), "localhost:5000/x:1.0", InspectOptions{
		Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"},
		Auth:     auth,
	})
	if err != nil {
		t.Fatal(err)
	}
	if v.Registry != "localhost:5000" || v.Digest != "sha256:2" || v.Tag != "1.0" || v.ID != "sha256:1" {
		t.Errorf("decoded %+v", v)
	}
	if !strings.Contains(string(raw), `"Registry":"localhost:5000"`) {
		t.Errorf("raw bytes not kept: %s", raw)
	}
	q := r.last.URL.Query()
	if q.Get("remote") != "1" {
		t.Errorf("remote=%q", q.Get("remote"))
	}
	var p ocispec.Platform
	if err := json.Unmarshal([]byte(q.Get("platform")), &p); err != nil || p.OS != "linux" || p.Architecture != "arm64" || p.Variant != "v8" {
		t.Errorf("platform %q (%v)", q.Get("platform"), err)
	}
	hv := r.last.Header.Get(AuthHeader)
	if strings.ContainsAny(hv, "+/") {
		t.Errorf("header %q is not URL-safe base64", hv)
	}
	got := decodeAuthHeader(t, hv)
	if got.Username != "u" || got.Password != auth.Password || got.ServerAddress != "localhost:5000" {
		t.Errorf("auth %+v", got)
	}
}

func TestRemoteManifestRawKeepsBytesAndMediaType(t *testing.T) {
	body := "{\n   \"schemaVersion\": 2 }"
	r, c := newRecorder(t, 200, "application/vnd.oci.image.manifest.v1+json", body)
	b, mt, err := c.RemoteManifest(context.Background(), "x", InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != body || mt != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("got %q %q", b, mt)
	}
	if r.last.URL.RawQuery != "raw=1&remote=1" {
		t.Errorf("query %q", r.last.URL.RawQuery)
	}
	if r.last.Header.Get(AuthHeader) != "" {
		t.Errorf("anonymous remote inspect sent X-Registry-Auth")
	}
}

func TestPushAndPullSendEmptyAuthWhenAnonymous(t *testing.T) {
	r, c := newRecorder(t, 200, "application/json", "")
	rc, err := c.ImagePush(context.Background(), "x", PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if a := decodeAuthHeader(t, r.last.Header.Get(AuthHeader)); a != (registry.AuthConfig{}) {
		t.Errorf("push auth %+v, want {}", a)
	}
	rc, err = c.ImagePull(context.Background(), "x", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if r.last.Header.Get(AuthHeader) == "" {
		t.Error("pull sent no X-Registry-Auth")
	}
	if r.last.URL.Query().Has("tag") {
		t.Error("pull without tag sent a tag (all tags expected)")
	}
}

func TestLoginSendsPlainJSON(t *testing.T) {
	r, c := newRecorder(t, 200, "application/json", `{"IdentityToken":"","Status":"Login Succeeded"}`)
	res, err := c.Login(context.Background(), registry.AuthConfig{Username: "u", Password: "p", ServerAddress: "r:5001"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "Login Succeeded" {
		t.Errorf("status %q", res.Status)
	}
	var a registry.AuthConfig
	if err := json.Unmarshal(r.body, &a); err != nil || a.Username != "u" || a.Password != "p" || a.ServerAddress != "r:5001" {
		t.Errorf("body %s (%v)", r.body, err)
	}
}

func TestStreamErrorInline(t *testing.T) {
	stream := `{"status":"Pulling from x","id":"1.0"}` + "\r\n" +
		`{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}` + "\r\n"
	_, c := newRecorder(t, 200, "application/json", stream)
	rc, err := c.ImagePull(context.Background(), "x", PullOptions{Tag: "1.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out strings.Builder
	err = DisplayStream(rc, &out, 0, false, nil)
	if err == nil || !strings.Contains(err.Error(), "manifest unknown") {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(out.String(), "1.0: Pulling from x") {
		t.Errorf("out %q", out.String())
	}
}

func TestDecodeEvents(t *testing.T) {
	in := `{"status":"tag","id":"sha256:1","Type":"image","Action":"tag","Actor":{"ID":"sha256:1","Attributes":{"name":"x:1"}},"time":1,"timeNano":1000000000}` + "\n" +
		`{"Type":"image","Action":"delete"}` + "\n"
	var actions []string
	for m, err := range DecodeEvents(strings.NewReader(in)) {
		if err != nil {
			t.Fatal(err)
		}
		actions = append(actions, string(m.Action))
	}
	if strings.Join(actions, ",") != "tag,delete" {
		t.Errorf("actions %v", actions)
	}
}

func TestConnectionFailed(t *testing.T) {
	c, err := New("unix:///nonexistent/wharf.sock")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Ping(context.Background())
	if !errors.Is(err, ErrConnectionFailed) {
		t.Errorf("err %v", err)
	}
}

func TestTraceSeesRequestsButNoHeaders(t *testing.T) {
	var lines []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeStatus := 404
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(writeStatus)
		_, _ = io.WriteString(w, `{"message":"No such image: x"}`)
	}))
	defer srv.Close()
	c, err := New("tcp://"+strings.TrimPrefix(srv.URL, "http://"), WithTrace(func(m, p string, s int) {
		lines = append(lines, m+" "+p+" "+http.StatusText(s))
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, _, _ = c.ImageInspectRemote(context.Background(), "x", InspectOptions{Auth: &registry.AuthConfig{Password: "secret"}})
	if len(lines) != 1 || lines[0] != "GET /v1.55/images/x/json?remote=1 Not Found" {
		t.Errorf("trace %q", lines)
	}
}

func TestDisplayStreamTerminalRewritesLayerLines(t *testing.T) {
	stream := `{"status":"Pulling from x","id":"1.0"}` + "\n" +
		`{"status":"Downloading","id":"aaaa","progressDetail":{"current":10,"total":100}}` + "\n" +
		`{"status":"Downloading","id":"aaaa","progressDetail":{"current":100,"total":100}}` + "\n" +
		`{"status":"Pull complete","id":"aaaa"}` + "\n"
	var tty, plain strings.Builder
	if err := DisplayStream(strings.NewReader(stream), &tty, 0, true, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tty.String(), "\x1b[") || !strings.Contains(tty.String(), "aaaa: Pull complete") {
		t.Errorf("terminal output has no cursor movement: %q", tty.String())
	}
	if err := DisplayStream(strings.NewReader(stream), &plain, 0, false, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") || plain.String() != "1.0: Pulling from x\naaaa: Pull complete\n" {
		t.Errorf("plain output %q", plain.String())
	}
}

// ImageAttestations is API 1.55's: a client pinned below refuses it
// before sending anything, as moby's does.
func TestImageAttestationsNeeds155(t *testing.T) {
	r, c := newRecorder(t, 200, "application/json", "[]")
	WithVersion("1.50")(c)
	_, _, err := c.ImageAttestations(context.Background(), "x", AttestationsOptions{})
	if err == nil || !strings.Contains(err.Error(), "requires API version 1.55") || r.last != nil {
		t.Fatalf("err %v, request sent %v", err, r.last != nil)
	}
}
