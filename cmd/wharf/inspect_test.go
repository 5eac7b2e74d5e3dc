package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

const tinyInspect = `{"Id":"sha256:a3e3b447a0a2bdac3511bc6921b1540d9a4971a37cdc3bbb80f5ce471fa8b2a2","RepoTags":["127.0.0.1:5000/tiny:1.0"],"RepoDigests":[],"Size":528,"Architecture":"amd64","Os":"linux","Config":{"Env":["PATH=/bin"],"Labels":{"a":"<b>"}},"RootFS":{"Type":"layers","Layers":["sha256:1"]}}`

const remoteInspect = `{"Id":"sha256:a3e3b447a0a2bdac3511bc6921b1540d9a4971a37cdc3bbb80f5ce471fa8b2a2","RepoTags":["localhost:5000/tiny:1.0"],"RepoDigests":["localhost:5000/tiny@sha256:1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6"],"Registry":"localhost:5000","Digest":"sha256:1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6","Tag":"1.0","Architecture":"amd64","Os":"linux"}`

// imagesDaemon answers image and container inspects: names listed in found
// are images; everything else is 404, and every container is 404.
func imagesDaemon(t *testing.T, found map[string]string) *fakeDaemon {
	return newFakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case p == "/v1.55/info":
			writeJSON(w, 200, `{"WharfSearchRegistries":["localhost:5000","docker.io"]}`)
		case strings.HasPrefix(p, "/v1.55/containers/") && strings.HasSuffix(p, "/json"):
			name := strings.TrimSuffix(strings.TrimPrefix(p, "/v1.55/containers/"), "/json")
			writeJSON(w, 404, `{"message":"No such container: `+name+`"}`)
		case strings.HasPrefix(p, "/v1.55/images/") && strings.HasSuffix(p, "/json"):
			name := strings.TrimSuffix(strings.TrimPrefix(p, "/v1.55/images/"), "/json")
			if r.URL.Query().Get("raw") == "1" {
				if body, ok := found[name+"#raw"]; ok {
					w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
					_, _ = w.Write([]byte(body))
					return
				}
			}
			if body, ok := found[name]; ok {
				writeJSON(w, 200, body)
				return
			}
			writeJSON(w, 404, `{"message":"No such image: `+name+`"}`)
		default:
			writeJSON(w, 404, `{"message":"page not found"}`)
		}
	})
}

func TestInspectSeveralNamesPrintsFoundThenErrorsAndExits1(t *testing.T) {
	d := imagesDaemon(t, map[string]string{"tiny": tinyInspect})
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "inspect", "tiny", "missing")
	if res.code != 1 {
		t.Errorf("exit %d, want 1", res.code)
	}
	var arr []map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &arr); err != nil || len(arr) != 1 {
		t.Fatalf("stdout is not a one-element JSON array: %v\n%s", err, res.stdout)
	}
	if !strings.HasPrefix(res.stdout, "[\n    {\n        \"Id\": \"sha256:a3e3") {
		t.Errorf("not indented by 4 spaces:\n%s", res.stdout)
	}
	if res.stderr != "Error: No such image or container: missing\n" {
		t.Errorf("stderr %q", res.stderr)
	}
	want := []string{"GET /v1.55/containers/tiny/json", "GET /v1.55/images/tiny/json", "GET /v1.55/containers/missing/json", "GET /v1.55/images/missing/json"}
	if got := d.paths(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestInspectAllMissingPrintsEmptyArray(t *testing.T) {
	d := imagesDaemon(t, nil)
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "inspect", "--type", "image", "a", "b")
	if res.code != 1 || res.stdout != "[]\n" {
		t.Errorf("exit %d stdout %q", res.code, res.stdout)
	}
	if res.stderr != "Error: No such image: a\nError: No such image: b\n" {
		t.Errorf("stderr %q", res.stderr)
	}
	for _, p := range d.paths() {
		if strings.Contains(p, "/containers/") {
			t.Errorf("--type=image looked up a container: %s", p)
		}
	}
}

func TestInspectAllFoundExits0(t *testing.T) {
	d := imagesDaemon(t, map[string]string{"tiny": tinyInspect, "127.0.0.1:5000/tiny:1.0": tinyInspect})
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "inspect", "tiny", "127.0.0.1:5000/tiny:1.0")
	if res.code != 0 || res.stderr != "" {
		t.Fatalf("exit %d stderr %q", res.code, res.stderr)
	}
	var arr []json.RawMessage
	if err := json.Unmarshal([]byte(res.stdout), &arr); err != nil || len(arr) != 2 {
		t.Errorf("want 2 elements: %v", err)
	}
}

func TestInspectRemoteMissingSaysNoSuchImage(t *testing.T) {
	d := imagesDaemon(t, map[string]string{"localhost:5000/tiny:1.0": remoteInspect})
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "inspect", "--remote", "localhost:5000/tiny:1.0", "localhost:5000/nope:1")
	if res.code != 1 {
		t.Errorf("exit %d", res.code)
	}
	if res.stderr != "Error: No such image: localhost:5000/nope:1\n" {
		t.Errorf("stderr %q", res.stderr)
	}
	if !strings.Contains(res.stdout, `"Registry": "localhost:5000"`) {
		t.Errorf("remote-only fields lost:\n%s", res.stdout)
	}
	for _, r := range d.requests() {
		if strings.Contains(r.URL.Path, "/containers/") {
			t.Errorf("--remote looked up a container")
		}
		if r.URL.Query().Get("remote") != "1" {
			t.Errorf("request without remote=1: %s", r.URL)
		}
	}
}

func TestInspectConflictingOptions(t *testing.T) {
	d := imagesDaemon(t, nil)
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"inspect", "--remote", "--type=container", "x"}, "conflicting options: --remote && --type=container\n"},
		{[]string{"inspect", "-r", "--type", "container", "x"}, "conflicting options: --remote && --type=container\n"},
		{[]string{"inspect", "--raw", "x"}, "--raw requires --remote\n"},
		{[]string{"inspect", "--type", "volume", "x"}, "\"volume\" is not a valid value for --type\n"},
		{[]string{"inspect", "--platform", "linux", "x"}, "invalid platform \"linux\": want os/arch[/variant]\n"},
	}
	for _, tt := range tests {
		res := runCLI(t, testEnv(t), "", append([]string{"-H", d.host()}, tt.args...)...)
		if res.code != 1 || res.stderr != tt.stderr || res.stdout != "" {
			t.Errorf("%v: exit %d stdout %q stderr %q, want 1 %q", tt.args, res.code, res.stdout, res.stderr, tt.stderr)
		}
	}
	if n := len(d.requests()); n != 0 {
		t.Errorf("%d requests sent for invalid options", n)
	}
}

func TestInspectRemoteDebugLogsResolvedName(t *testing.T) {
	d := imagesDaemon(t, map[string]string{"localhost:5000/tiny:1.0": remoteInspect})
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "-D", "inspect", "-r", "localhost:5000/tiny:1.0")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	want := "Inspecting image localhost:5000/tiny:1.0@sha256:1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6"
	if !strings.Contains(res.stderr, want) {
		t.Errorf("stderr %q lacks %q", res.stderr, want)
	}
	// Without -D nothing is logged.
	res = runCLI(t, testEnv(t), "", "-H", d.host(), "inspect", "-r", "localhost:5000/tiny:1.0")
	if res.stderr != "" {
		t.Errorf("stderr without -D: %q", res.stderr)
	}
}

func TestDescribeRemoteShortNameFromAddRegistry(t *testing.T) {
	tests := []struct{ name, reg, tag, dgst, want string }{
		{"alpine", "docker.io", "latest", "sha256:1", "alpine:latest@sha256:1"},
		{"alpine", "myreg:5000", "latest", "sha256:1", "myreg:5000/alpine:latest@sha256:1"},
		{"localhost:5000/a@sha256:1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6", "localhost:5000", "", "sha256:1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6", "localhost:5000/a@sha256:1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6"},
	}
	for _, tt := range tests {
		if got := describeRemote(tt.name, tt.reg, tt.tag, tt.dgst); got != tt.want {
			t.Errorf("describeRemote(%q, %q) = %q, want %q", tt.name, tt.reg, got, tt.want)
		}
	}
}

func TestInspectRawPrintsManifestBytesAsServed(t *testing.T) {
	manifest := "{\n  \"schemaVersion\": 2,\n  \"mediaType\": \"application/vnd.oci.image.manifest.v1+json\"\n}"
	d := imagesDaemon(t, map[string]string{"localhost:5000/tiny:1.0#raw": manifest})
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "inspect", "--remote", "--raw", "localhost:5000/tiny:1.0")
	if res.code != 0 || res.stdout != manifest {
		t.Errorf("exit %d stdout %q", res.code, res.stdout)
	}
	if q := d.requests()[0].URL.Query(); q.Get("raw") != "1" || q.Get("remote") != "1" {
		t.Errorf("query %v", q)
	}
}

func TestInspectFormatTemplate(t *testing.T) {
	d := imagesDaemon(t, map[string]string{"tiny": tinyInspect, "localhost:5000/tiny:1.0": remoteInspect})
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"inspect", "--type=image", "-f", "{{json .RepoTags}} {{.Os}}/{{.Architecture}}", "tiny"}, "[\"127.0.0.1:5000/tiny:1.0\"] linux/amd64\n"},
		{[]string{"inspect", "--format", "{{json .Config.Labels}}", "tiny"}, "{\"a\":\"<b>\"}\n"},
		{[]string{"inspect", "--format", "{{.Size}}", "tiny"}, "528\n"},
		{[]string{"inspect", "-r", "-f", "{{.Registry}} {{.Tag}} {{upper .Os}}", "localhost:5000/tiny:1.0"}, "localhost:5000 1.0 LINUX\n"},
		{[]string{"inspect", "-f", "{{join .Config.Env \",\"}}", "tiny"}, "PATH=/bin\n"},
	}
	for _, tt := range tests {
		res := runCLI(t, testEnv(t), "", append([]string{"-H", d.host()}, tt.args...)...)
		if res.code != 0 || res.stdout != tt.want {
			t.Errorf("%v: exit %d stdout %q stderr %q, want %q", tt.args, res.code, res.stdout, res.stderr, tt.want)
		}
	}
}

func TestInspectPlatformSentAsJSON(t *testing.T) {
	d := imagesDaemon(t, map[string]string{"localhost:5000/tiny:1.0": remoteInspect})
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "inspect", "-r", "--platform", "linux/arm64/v8", "localhost:5000/tiny:1.0")
	if res.code != 0 {
		t.Fatalf("exit %d %s", res.code, res.stderr)
	}
	var p ocispec.Platform
	raw := d.requests()[0].URL.Query().Get("platform")
	if err := json.Unmarshal([]byte(raw), &p); err != nil || p.OS != "linux" || p.Architecture != "arm64" || p.Variant != "" {
		t.Errorf("platform %q: %v", raw, err)
	}
}

// writeDockerConfig writes config.json into the env's DOCKER_CONFIG.
func writeDockerConfig(t *testing.T, env fakeEnv, cfg string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(env["DOCKER_CONFIG"], "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

func basicAuth(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

func TestInspectRemoteSendsStoredCredentialsForItsRegistryOnly(t *testing.T) {
	env := testEnv(t)
	writeDockerConfig(t, env, `{"auths":{"localhost:5000":{"auth":"`+basicAuth("testuser", "testpass")+`"},"https://index.docker.io/v1/":{"auth":"`+basicAuth("hubuser", "hubpass")+`"}}}`)
	d := imagesDaemon(t, map[string]string{"localhost:5000/tiny:1.0": remoteInspect, "alpine": remoteInspect, "other:5001/x": remoteInspect})
	res := runCLI(t, env, "", "-H", d.host(), "inspect", "-r", "localhost:5000/tiny:1.0", "alpine", "other:5001/x")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	reqs := d.apiRequests()
	// X-Registry-Auth (for a wharfd that does not read X-Registry-Config)
	// is the set of NAME's own registry, naming it: never one without a
	// server address, which a daemon binds to the first registry searched.
	for i, want := range []string{"localhost:5000", "https://index.docker.io/v1/", ""} {
		if reqs[i].Header.Get("X-Registry-Auth") == "" {
			if want != "" {
				t.Errorf("%s: no X-Registry-Auth for %s", reqs[i].URL.Path, want)
			}
			continue
		}
		if a := decodeAuth(t, reqs[i]); a.ServerAddress != want {
			t.Errorf("%s: X-Registry-Auth for %q, want %q", reqs[i].URL.Path, a.ServerAddress, want)
		}
	}
	if m := decodeConfig(t, reqs[0]); len(m) != 1 || m["localhost:5000"].Username != "testuser" || m["localhost:5000"].Password != "testpass" || m["localhost:5000"].ServerAddress != "localhost:5000" {
		t.Errorf("localhost:5000 credentials %+v", m)
	}
	// A short name: the daemon searches localhost:5000, then docker.io;
	// each set is keyed by its registry, and the daemon gives each its own.
	if m := decodeConfig(t, reqs[1]); len(m) != 2 || m["localhost:5000"].Username != "testuser" || m["https://index.docker.io/v1/"].Username != "hubuser" {
		t.Errorf("short name credentials %+v", m)
	}
	if m := decodeConfig(t, reqs[2]); m != nil {
		t.Errorf("credentials sent to a registry without any: %+v", m)
	}
}

func TestInspectRemoteFailingCredentialHelperIsAnError(t *testing.T) {
	env := testEnv(t)
	writeDockerConfig(t, env, `{"credsStore":"wharf-test-no-such-helper"}`)
	d := imagesDaemon(t, map[string]string{"localhost:5000/tiny:1.0": remoteInspect})
	res := runCLI(t, env, "", "-H", d.host(), "inspect", "-r", "localhost:5000/tiny:1.0")
	if res.code != 1 || !strings.Contains(res.stderr, "error getting credentials for localhost:5000") {
		t.Errorf("exit %d stderr %q", res.code, res.stderr)
	}
	if n := len(d.requests()); n != 0 {
		t.Errorf("inspected anonymously after a helper failure (%d requests)", n)
	}
}

func TestInspectFormatJSONIsTheIndentedArray(t *testing.T) {
	d := imagesDaemon(t, map[string]string{"tiny": tinyInspect})
	a := runCLI(t, testEnv(t), "", "-H", d.host(), "inspect", "--type=image", "tiny")
	b := runCLI(t, testEnv(t), "", "-H", d.host(), "inspect", "--type=image", "--format", "json", "tiny")
	if a.stdout != b.stdout || !strings.HasPrefix(b.stdout, "[\n    {") {
		t.Errorf("--format json:\n%s\ndefault:\n%s", b.stdout, a.stdout)
	}
}

func TestInspectRemoteOther404KeepsDaemonMessage(t *testing.T) {
	d := newFakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 404, `{"message":"no matching manifest for linux/s390x in the index; available: linux/amd64, linux/arm64"}`)
	})
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "inspect", "-r", "--platform", "linux/s390x", "localhost:5000/x:1")
	if res.code != 1 || res.stderr != "Error response from daemon: no matching manifest for linux/s390x in the index; available: linux/amd64, linux/arm64\n" {
		t.Errorf("exit %d stderr %q", res.code, res.stderr)
	}
}

func TestInspectWithoutDaemonFailsOnce(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	res := runCLI(t, testEnv(t), "", "-H", "unix://"+sock, "inspect", "a", "b")
	if res.code != 1 || res.stdout != "" || strings.Count(res.stderr, "\n") != 1 || !strings.Contains(res.stderr, "Cannot connect to the wharf daemon at unix://"+sock) {
		t.Errorf("exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
	}
}
