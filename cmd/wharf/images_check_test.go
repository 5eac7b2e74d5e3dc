package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/registry"
)

// checkDaemon lists three tagged images on two registries and answers the
// update check with lines.
func checkDaemon(t *testing.T, lines ...string) *fakeDaemon {
	return newFakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1.55/images/json":
			writeJSON(w, 200, `[{"Id":"sha256:a3e3b447a0a2bdac3511bc6921b1540d9a4971a37cdc3bbb80f5ce471fa8b2a2","RepoTags":["localhost:5000/app:1","localhost:5000/app:2"],"RepoDigests":[],"Created":1,"Size":1,"SharedSize":-1,"Containers":-1},
				{"Id":"sha256:b3e3b447a0a2bdac3511bc6921b1540d9a4971a37cdc3bbb80f5ce471fa8b2a2","RepoTags":["other.example:5000/base:1"],"RepoDigests":[],"Created":1,"Size":1,"SharedSize":-1,"Containers":-1}]`)
		case "/v1.55/wharf/images/check-remote":
			w.Header().Set("Content-Type", "application/x-ndjson")
			_, _ = io.WriteString(w, strings.Join(lines, "\n")+"\n")
		default:
			writeJSON(w, 404, `{"message":"page not found"}`)
		}
	})
}

func TestImagesCheckRemoteColumnsAndExitCode(t *testing.T) {
	current := `{"Repository":"localhost:5000/app","Tag":"1","ID":"sha256:a3","RemoteStatus":"current","RemoteDigest":"sha256:11"}`
	outdated := `{"Repository":"localhost:5000/app","Tag":"2","ID":"sha256:a3","RemoteStatus":"outdated","RemoteDigest":"sha256:22","PlatformChanged":false}`
	failed := `{"Repository":"other.example:5000/base","Tag":"1","ID":"sha256:b3","RemoteStatus":"error","RemoteError":"registry other.example:5000: connection refused"}`
	env := testEnv(t)
	writeDockerConfig(t, env, `{"auths":{"localhost:5000":{"auth":"`+basicAuth("u1", "p1")+`"},"elsewhere.example":{"auth":"`+basicAuth("no", "no")+`"}}}`)

	d := checkDaemon(t, current, outdated, failed)
	res := runCLI(t, env, "", "-H", d.host(), "images", "--check-remote", "--max-age", "5m")
	if res.code != 0 {
		t.Fatalf("exit %d without --exit-code: %s", res.code, res.stderr)
	}
	if !strings.HasPrefix(res.stdout, "REPOSITORY") || !strings.Contains(strings.Split(res.stdout, "\n")[0], "REMOTE") {
		t.Errorf("header: %q", res.stdout)
	}
	for _, want := range []string{"current", "outdated (platform unchanged)", "error"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, res.stdout)
		}
	}
	if !strings.Contains(res.stderr, "other.example:5000/base:1: registry other.example:5000: connection refused") {
		t.Errorf("stderr %q", res.stderr)
	}
	reqs := d.requests()
	check := reqs[len(reqs)-1]
	if check.Method != http.MethodPost || check.URL.Query().Get("max-age") != "5m0s" || len(check.URL.Query()["name"]) != 0 {
		t.Errorf("check request %s %s", check.Method, check.URL)
	}
	// Only the credential of a registry the images are on, keyed by it.
	b, err := base64.URLEncoding.DecodeString(check.Header.Get("X-Registry-Config"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]registry.AuthConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg) != 1 || cfg["localhost:5000"].Username != "u1" {
		t.Errorf("X-Registry-Config %v", cfg)
	}

	for _, tc := range []struct {
		lines []string
		code  int
	}{
		{[]string{current, outdated, failed}, 1},
		{[]string{current, failed}, 2},
		{[]string{current}, 0},
		// --newer and --base answers count too (issue 24).
		{[]string{`{"Repository":"localhost:5000/app","Tag":"1.0","RemoteStatus":"current","VersionTag":true,"NewerMinor":"1.1"}`}, 1},
		{[]string{`{"Repository":"localhost:5000/app","Tag":"1.0","RemoteStatus":"current","VersionTag":true}`}, 0},
		{[]string{`{"Repository":"localhost:5000/app","Tag":"1.0","RemoteStatus":"current","BaseStatus":"outdated"}`}, 1},
		{[]string{`{"Repository":"localhost:5000/app","Tag":"1.0","RemoteStatus":"current","BaseStatus":"current"}`}, 0},
		{[]string{`{"Repository":"localhost:5000/app","Tag":"1.0","RemoteStatus":"current","BaseStatus":"unknown","BaseError":"refused"}`}, 2},
		{[]string{`{"Repository":"localhost:5000/app","Tag":"1.0","RemoteStatus":"current","VersionTag":true,"NewerError":"listing the tags: 403"}`}, 2},
	} {
		d := checkDaemon(t, tc.lines...)
		res := runCLI(t, env, "", "-H", d.host(), "images", "--check-remote", "--exit-code", "--format", "json")
		if res.code != tc.code {
			t.Errorf("%q: exit %d, want %d (%s)", tc.lines, res.code, tc.code, res.stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
			var row map[string]any
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			if _, ok := row["RemoteStatus"]; !ok {
				t.Errorf("line without RemoteStatus: %s", line)
			}
		}
	}
}

func TestImagesCheckRemoteFlagsNeedIt(t *testing.T) {
	d := checkDaemon(t)
	for _, args := range [][]string{{"--exit-code"}, {"--max-age", "1m"}} {
		res := runCLI(t, testEnv(t), "", append([]string{"-H", d.host(), "images"}, args...)...)
		if res.code == 0 || !strings.Contains(res.stderr, "need --check-remote") {
			t.Errorf("%v: exit %d %q", args, res.code, res.stderr)
		}
	}
	// Several names only with --check-remote.
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "images", "a", "b"); res.code == 0 {
		t.Error("two names accepted without --check-remote")
	}
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "images", "--check-remote", "localhost:5000/app", "other.example:5000/base")
	if res.code != 0 {
		t.Fatalf("exit %d %s", res.code, res.stderr)
	}
	q := d.requests()[len(d.requests())-1].URL.Query()
	if got := strings.Join(q["name"], ","); got != "localhost:5000/app:1,localhost:5000/app:2,other.example:5000/base:1" {
		t.Errorf("names %q: the rows shown", got)
	}
}
