package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/registry"
)

// registryDaemon answers /auth, pull and push like wharfd.
func registryDaemon(t *testing.T) *fakeDaemon {
	return newFakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1.55/auth":
			writeJSON(w, 200, `{"IdentityToken":"","Status":"Login Succeeded"}`)
		case r.URL.Path == "/v1.55/info":
			writeJSON(w, 200, searchInfo)
		case r.URL.Path == "/v1.55/images/create":
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Query().Get("tag") == "broken" {
				_, _ = w.Write([]byte(`{"status":"Pulling from x","id":"broken"}` + "\r\n" + `{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}` + "\r\n"))
				return
			}
			_, _ = w.Write([]byte(`{"status":"Pulling from tiny","id":"1.0"}` + "\r\n" + `{"status":"Digest: sha256:1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6"}` + "\r\n" + `{"status":"Status: Downloaded newer image for 127.0.0.1:5000/tiny:1.0"}` + "\r\n"))
		case strings.HasSuffix(r.URL.Path, "/push"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"status":"The push refers to repository [127.0.0.1:5000/tiny]"}` + "\r\n" + `{"status":"1.0: digest: sha256:1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6 size: 528"}` + "\r\n" + `{"progressDetail":{},"aux":{"Tag":"1.0","Digest":"sha256:1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6","Size":528}}` + "\r\n"))
		default:
			writeJSON(w, 404, `{"message":"page not found"}`)
		}
	})
}

// searchInfo is a wharfd's /info with add-registry 127.0.0.1:5001: a
// short name is searched there, then on docker.io.
const searchInfo = `{"WharfSearchRegistries":["127.0.0.1:5001","docker.io"]}`

// decodeConfig is the X-Registry-Config a request carried (nil: none).
func decodeConfig(t *testing.T, r *http.Request) map[string]registry.AuthConfig {
	t.Helper()
	v := r.Header.Get("X-Registry-Config")
	if v == "" {
		return nil
	}
	b, err := base64.URLEncoding.DecodeString(v)
	if err != nil {
		t.Fatalf("X-Registry-Config %q: %v", v, err)
	}
	var m map[string]registry.AuthConfig
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// apiRequests are the requests other than GET /info.
func (d *fakeDaemon) apiRequests() []*http.Request {
	var out []*http.Request
	for _, r := range d.requests() {
		if r.URL.Path != "/v1.55/info" {
			out = append(out, r)
		}
	}
	return out
}

func decodeAuth(t *testing.T, r *http.Request) registry.AuthConfig {
	t.Helper()
	v := r.Header.Get("X-Registry-Auth")
	b, err := base64.URLEncoding.DecodeString(v)
	if err != nil {
		t.Fatalf("X-Registry-Auth %q: %v", v, err)
	}
	var a registry.AuthConfig
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

func readConfig(t *testing.T, env fakeEnv) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env["DOCKER_CONFIG"], "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLoginStoresCredentialsThenPullSendsThem(t *testing.T) {
	env := testEnv(t)
	d := registryDaemon(t)
	res := runCLI(t, env, "testpass\n", "-H", d.host(), "login", "-u", "testuser", "--password-stdin", "127.0.0.1:5001")
	if res.code != 0 || res.stdout != "Login Succeeded\n" {
		t.Fatalf("login: exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
	}
	var sent registry.AuthConfig
	if err := json.Unmarshal(d.bodies[0], &sent); err != nil || sent.Username != "testuser" || sent.Password != "testpass" || sent.ServerAddress != "127.0.0.1:5001" {
		t.Errorf("POST /auth body %s: %v", d.bodies[0], err)
	}
	auths, _ := readConfig(t, env)["auths"].(map[string]any)
	entry, _ := auths["127.0.0.1:5001"].(map[string]any)
	if entry["auth"] != basicAuth("testuser", "testpass") {
		t.Errorf("config auths %v", auths)
	}

	res = runCLI(t, env, "", "-H", d.host(), "pull", "127.0.0.1:5001/tiny:1.0")
	if res.code != 0 {
		t.Fatalf("pull: exit %d %s", res.code, res.stderr)
	}
	pull := d.requests()[1]
	if pull.URL.RawQuery != "fromImage=127.0.0.1%3A5001%2Ftiny&tag=1.0" {
		t.Errorf("pull query %s", pull.URL.RawQuery)
	}
	if m := decodeConfig(t, pull); len(m) != 1 || m["127.0.0.1:5001"].Username != "testuser" || m["127.0.0.1:5001"].Password != "testpass" {
		t.Errorf("pull credentials %+v", m)
	}
	if !strings.HasSuffix(res.stdout, "127.0.0.1:5001/tiny:1.0\n") || !strings.Contains(res.stdout, "1.0: Pulling from tiny") {
		t.Errorf("pull output %q", res.stdout)
	}

	// Another registry gets no credentials: "{}", and no set keyed by
	// registry.
	res = runCLI(t, env, "", "-H", d.host(), "pull", "-q", "127.0.0.1:5000/tiny:1.0")
	if res.code != 0 || res.stdout != "127.0.0.1:5000/tiny:1.0\n" {
		t.Fatalf("pull -q: exit %d stdout %q", res.code, res.stdout)
	}
	if a, m := decodeAuth(t, d.requests()[2]), decodeConfig(t, d.requests()[2]); a != (registry.AuthConfig{}) || m != nil {
		t.Errorf("credentials leaked to another registry: %+v %+v", a, m)
	}

	// A short name: the daemon searches 127.0.0.1:5001 first, where the
	// login is; its set goes, keyed by it (the daemon sends it there only).
	res = runCLI(t, env, "", "-H", d.host(), "pull", "-q", "tiny:1.0")
	if res.code != 0 {
		t.Fatalf("pull -q tiny:1.0: exit %d %s", res.code, res.stderr)
	}
	api := d.apiRequests()
	short := api[len(api)-1]
	if short.URL.RawQuery != "fromImage=tiny&tag=1.0" {
		t.Errorf("short pull query %s", short.URL.RawQuery)
	}
	if m := decodeConfig(t, short); len(m) != 1 || m["127.0.0.1:5001"].Username != "testuser" {
		t.Errorf("short pull credentials %+v", m)
	}

	res = runCLI(t, env, "", "logout", "127.0.0.1:5001")
	if res.code != 0 || res.stdout != "Removing login credentials for 127.0.0.1:5001\n" {
		t.Errorf("logout: exit %d stdout %q", res.code, res.stdout)
	}
	if auths, _ := readConfig(t, env)["auths"].(map[string]any); auths["127.0.0.1:5001"] != nil {
		t.Errorf("credentials still stored: %v", auths)
	}
	res = runCLI(t, env, "", "logout", "127.0.0.1:5001")
	if res.stdout != "Not logged in to 127.0.0.1:5001\n" {
		t.Errorf("second logout: %q", res.stdout)
	}
}

func TestLoginDefaultsToDockerHubKey(t *testing.T) {
	env := testEnv(t)
	d := registryDaemon(t)
	res := runCLI(t, env, "pw", "-H", d.host(), "login", "-u", "hub", "--password-stdin")
	if res.code != 0 {
		t.Fatalf("exit %d %s", res.code, res.stderr)
	}
	auths, _ := readConfig(t, env)["auths"].(map[string]any)
	if auths["https://index.docker.io/v1/"] == nil {
		t.Errorf("auths %v", auths)
	}
	res = runCLI(t, env, "", "-H", d.host(), "pull", "alpine")
	if res.code != 0 {
		t.Fatalf("pull: %d %s", res.code, res.stderr)
	}
	pull := d.apiRequests()[1]
	// The name as typed: the daemon searches a short name itself.
	if pull.URL.RawQuery != "fromImage=alpine&tag=latest" {
		t.Errorf("query %s", pull.URL.RawQuery)
	}
	if m := decodeConfig(t, pull); len(m) != 1 || m["https://index.docker.io/v1/"].Username != "hub" || m["https://index.docker.io/v1/"].ServerAddress != "https://index.docker.io/v1/" {
		t.Errorf("credentials %+v", m)
	}
	if !strings.HasPrefix(res.stdout, "Using default tag: latest\n") {
		t.Errorf("stdout %q", res.stdout)
	}
}

func TestLoginWithoutTTYOrPassword(t *testing.T) {
	res := runCLI(t, testEnv(t), "", "-H", "tcp://127.0.0.1:1", "login", "r")
	if res.code != 1 || !strings.Contains(res.stderr, "Cannot perform an interactive login from a non TTY device") {
		t.Errorf("exit %d stderr %q", res.code, res.stderr)
	}
	res = runCLI(t, testEnv(t), "pw", "-H", "tcp://127.0.0.1:1", "login", "--password-stdin", "r")
	if res.code != 1 || !strings.Contains(res.stderr, "Must provide --username with --password-stdin") {
		t.Errorf("exit %d stderr %q", res.code, res.stderr)
	}
}

func TestLoginWithFailingHelperIsAnError(t *testing.T) {
	env := testEnv(t)
	writeDockerConfig(t, env, `{"credsStore":"wharf-test-no-such-helper"}`)
	d := registryDaemon(t)
	res := runCLI(t, env, "pw", "-H", d.host(), "login", "-u", "u", "--password-stdin", "r:5000")
	if res.code != 1 || !strings.Contains(res.stderr, "error saving credentials") {
		t.Errorf("exit %d stderr %q", res.code, res.stderr)
	}
	if _, err := os.Stat(filepath.Join(env["DOCKER_CONFIG"], "config.json")); err != nil {
		t.Fatal(err)
	}
	if auths := readConfig(t, env)["auths"]; auths != nil {
		t.Errorf("fell back to plain auths: %v", auths)
	}
}

func TestPullStreamErrorExits1(t *testing.T) {
	d := registryDaemon(t)
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "pull", "127.0.0.1:5000/x:broken")
	if res.code != 1 || !strings.Contains(res.stderr, "manifest unknown") {
		t.Errorf("exit %d stderr %q", res.code, res.stderr)
	}
}

func TestPullAllTagsAndDigest(t *testing.T) {
	d := registryDaemon(t)
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "pull", "-a", "127.0.0.1:5000/tiny"); res.code != 0 {
		t.Fatalf("exit %d %s", res.code, res.stderr)
	}
	if q := d.requests()[0].URL.Query(); q.Has("tag") {
		t.Errorf("pull -a sent tag %q", q.Get("tag"))
	}
	dg := "sha256:1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6"
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "pull", "--platform", "linux/arm64", "127.0.0.1:5000/tiny@"+dg); res.code != 0 {
		t.Fatalf("exit %d %s", res.code, res.stderr)
	}
	q := d.requests()[1].URL.Query()
	if q.Get("tag") != dg || q.Get("fromImage") != "127.0.0.1:5000/tiny" || q.Get("platform") != "linux/arm64" {
		t.Errorf("query %v", q)
	}
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "pull", "-a", "x:1"); res.code != 1 {
		t.Errorf("pull -a with a tag: exit %d", res.code)
	}
}

func TestPushSendsEmptyAuthAndFamiliarName(t *testing.T) {
	d := registryDaemon(t)
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "push", "127.0.0.1:5000/tiny:1.0")
	if res.code != 0 {
		t.Fatalf("exit %d %s", res.code, res.stderr)
	}
	r := d.requests()[0]
	if r.URL.EscapedPath() != "/v1.55/images/127.0.0.1:5000/tiny/push" || r.URL.RawQuery != "tag=1.0" {
		t.Errorf("request %s?%s", r.URL.EscapedPath(), r.URL.RawQuery)
	}
	if a := decodeAuth(t, r); a != (registry.AuthConfig{}) {
		t.Errorf("auth %+v", a)
	}
	if !strings.Contains(res.stdout, "1.0: digest: sha256:1711") {
		t.Errorf("stdout %q", res.stdout)
	}
}

func TestPushQuietPrintsReference(t *testing.T) {
	d := registryDaemon(t)
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "push", "-q", "127.0.0.1:5000/tiny:1.0")
	if res.code != 0 || res.stdout != "127.0.0.1:5000/tiny:1.0\n" {
		t.Errorf("exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, testEnv(t), "", "-H", d.host(), "push", "127.0.0.1:5000/tiny")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "Using default tag: latest\n") || d.requests()[1].URL.RawQuery != "tag=latest" {
		t.Errorf("push without tag: %q %s", res.stdout, d.requests()[1].URL.RawQuery)
	}
}
