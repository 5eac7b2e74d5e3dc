package creds

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/registry"
)

// fakeEnv is a fixed environment: HOME and DOCKER_CONFIG in temp dirs.
type fakeEnv map[string]string

func (e fakeEnv) Getenv(k string) string { return e[k] }

func testEnv(t *testing.T) fakeEnv {
	t.Helper()
	return fakeEnv{"HOME": t.TempDir(), "DOCKER_CONFIG": t.TempDir()}
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

func newTestCLI(env fakeEnv) *Finder {
	return &Finder{Getenv: env.Getenv, Debugf: func(string, ...any) {}}
}

func TestAuthForPlainAuths(t *testing.T) {
	env := testEnv(t)
	writeDockerConfig(t, env, `{"auths":{
		"localhost:5000":{"auth":"`+basicAuth("u1", "p1")+`"},
		"https://index.docker.io/v1/":{"auth":"`+basicAuth("hub", "hp")+`"},
		"tok.example.com":{"identitytoken":"refresh-xyz","auth":"`+basicAuth("<token>", "")+`"}}}`)
	c := newTestCLI(env)
	tests := []struct {
		image, user, pass, server, identity string
		none                                bool
	}{
		{image: "localhost:5000/a/b:1", user: "u1", pass: "p1", server: "localhost:5000"},
		{image: "alpine", user: "hub", pass: "hp", server: DockerHubKey},
		{image: "docker.io/library/alpine:3", user: "hub", pass: "hp", server: DockerHubKey},
		{image: "tok.example.com/x", user: "<token>", server: "tok.example.com", identity: "refresh-xyz"},
		{image: "other.example.com/x", none: true},
		{image: "localhost:5001/a", none: true},
		{image: "UPPER/case", none: true},
	}
	for _, tt := range tests {
		a, err := authFor(c, tt.image)
		if err != nil {
			t.Errorf("%s: %v", tt.image, err)
			continue
		}
		if tt.none {
			if a != nil {
				t.Errorf("%s: credentials %+v, want none", tt.image, a)
			}
			continue
		}
		if a == nil || a.Username != tt.user || a.Password != tt.pass || a.ServerAddress != tt.server || a.IdentityToken != tt.identity {
			t.Errorf("%s: %+v", tt.image, a)
		}
	}
}

func TestAuthForFailingHelpersAreErrors(t *testing.T) {
	env := testEnv(t)
	writeDockerConfig(t, env, `{
		"auths":{"plain.example.com":{"auth":"`+basicAuth("u", "p")+`"}},
		"credHelpers":{"helped.example.com":"wharf-test-missing-helper"}}`)
	c := newTestCLI(env)
	if _, err := authFor(c, "helped.example.com/x:1"); err == nil || !strings.Contains(err.Error(), "helped.example.com") {
		t.Errorf("credHelpers with a missing helper: err %v", err)
	}
	if a, err := authFor(c, "plain.example.com/x:1"); err != nil || a == nil || a.Username != "u" {
		t.Errorf("plain auth next to a helper: %+v %v", a, err)
	}

	writeDockerConfig(t, env, `{"credsStore":"wharf-test-missing-helper","auths":{"localhost:5000":{"auth":"`+basicAuth("u", "p")+`"}}}`)
	if a, err := authFor(c, "localhost:5000/x"); err == nil {
		t.Errorf("credsStore with a missing helper fell back to %+v", a)
	}
}

func TestAuthForMissingConfigIsAnonymous(t *testing.T) {
	c := newTestCLI(testEnv(t))
	if a, err := authFor(c, "alpine"); err != nil || a != nil {
		t.Errorf("%+v %v", a, err)
	}
}

func TestDockerConfigPath(t *testing.T) {
	if p, _ := newTestCLI(fakeEnv{"DOCKER_CONFIG": "/d", "HOME": "/h"}).path(); p != "/d/config.json" {
		t.Errorf("DOCKER_CONFIG: %s", p)
	}
	if p, _ := newTestCLI(fakeEnv{"HOME": "/h"}).path(); p != "/h/.docker/config.json" {
		t.Errorf("HOME: %s", p)
	}
}

func TestServerKey(t *testing.T) {
	tests := map[string]string{
		"":                            DockerHubKey,
		"docker.io":                   DockerHubKey,
		"index.docker.io":             DockerHubKey,
		"registry-1.docker.io":        DockerHubKey,
		"https://index.docker.io/v1/": DockerHubKey,
		"localhost:5000":              "localhost:5000",
		"https://r.example.com/v2/":   "r.example.com",
	}
	for in, want := range tests {
		if got := ServerKey(in); got != want {
			t.Errorf("ServerKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// authFor is the stored credentials of name's own registry, as the CLI
// looks them up for one registry (forServer on the name's key). The
// commands send per-registry sets instead (SearchConfig): a short name's
// own registry is not known before the daemon searched it.
func authFor(f *Finder, name string) (*registry.AuthConfig, error) {
	host := registryHost(name)
	if host == "" {
		return nil, nil
	}
	return f.forServer(context.Background(), ServerKey(host))
}
