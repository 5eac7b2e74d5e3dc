package daemon

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfproject/wharf/registry"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestAuthFileSetsGoOnlyToTheirRegistry: the sets of the file, handed to
// the registry layer's per-registry binding as the watch hands them, go to
// the registry their key names (matched as logins are: Docker Hub's
// aliases, a scheme or a path ignored) and to no other — not to another
// port of the same host, not to a host that merely ends like it.
func TestAuthFileSetsGoOnlyToTheirRegistry(t *testing.T) {
	af, err := parseAuthFile([]byte(`{"auths":{
		"https://index.docker.io/v1/":{"auth":"` + b64("hub:pw") + `"},
		"http://a.example:5000/v2/":{"username":"a","password":"pa"},
		"b.example":{"identitytoken":"tb"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ra, errs := af.credentials(context.Background())
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	c := registry.Credentials{Registries: ra.sets}
	for _, tc := range []struct{ registry, user, token string }{
		{"docker.io", "hub", ""},
		{"index.docker.io", "hub", ""},
		{"registry-1.docker.io", "hub", ""},
		{"a.example:5000", "a", ""},
		{"a.example", "", ""},
		{"a.example:5001", "", ""},
		{"b.example", "", "tb"},
		{"evil-b.example", "", ""},
		{"b.example.evil", "", ""},
		{"c.example", "", ""},
	} {
		got := c.For(tc.registry)
		var user, token string
		if got != nil {
			user, token = got.Username, got.IdentityToken
		}
		if user != tc.user || token != tc.token {
			t.Errorf("%s: user %q token %q, want %q %q", tc.registry, user, token, tc.user, tc.token)
		}
	}
}

// fakeHelper writes docker-credential-NAME, a shell script, into a temp
// dir on PATH.
func fakeHelper(t *testing.T, name, script string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "docker-credential-"+name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

// TestCredentialHelperThroughTheFile: credHelpers and credsStore, asked
// for a round; a failing helper costs its own host only.
func TestCredentialHelperThroughTheFile(t *testing.T) {
	fakeHelper(t, "fake", `
[ "$1" = get ] || exit 9
read -r host
case "$host" in
  user.example) printf '{"ServerURL":"%s","Username":"bob","Secret":"hunter2"}' "$host" ;;
  token.example) printf '{"ServerURL":"%s","Username":"<token>","Secret":"idtok"}' "$host" ;;
  missing.example) printf 'credentials not found in native keychain'; exit 1 ;;
  broken.example) printf 'leaked-secret-in-output'; exit 3 ;;
  *) exit 7 ;;
esac
`)
	// Through the file: credHelpers and credsStore; a failing helper
	// costs its own host only.
	af, err := parseAuthFile([]byte(`{"auths":{"user.example":{},"inline.example":{"auth":"` + b64("i:pi") + `"}},"credsStore":"fake","credHelpers":{"token.example":"fake","broken.example":"fake","missing.example":"fake"}}`))
	if err != nil {
		t.Fatal(err)
	}
	ra, errs := af.credentials(context.Background())
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "broken.example") {
		t.Errorf("errs %v, want one, for broken.example", errs)
	}
	// The failed helper's registry is skipped for the round, no other.
	if !ra.skips("broken.example") || ra.skips("missing.example") || ra.skips("user.example") || ra.skips("broken.example:5000") {
		t.Errorf("skips: %v", ra.failed)
	}
	creds := ra.sets
	if len(creds) != 3 || creds["user.example"].Password != "hunter2" || creds["token.example"].IdentityToken != "idtok" || creds["inline.example"].Password != "pi" {
		t.Errorf("creds: %d sets", len(creds))
	}
}

func TestCheckRemoteAuthFileConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "config.json")
	if err := os.WriteFile(good, []byte(`{"auths":{"r":{"auth":"`+b64("u:s3cret")+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open.json")
	if err := os.WriteFile(open, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"auths":{"r":{"auth":"s3cret"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file string
		flags      []string
		loaded     bool
		warnings   int
		wantErr    string
	}{
		{name: "none", file: `{}`},
		{name: "file", file: `{"check-remote-auth-file":"` + good + `"}`, loaded: true},
		{name: "flag", file: `{}`, flags: []string{"--check-remote-auth-file", good}, loaded: true},
		{name: "readable by others", file: `{"check-remote-auth-file":"` + open + `"}`, loaded: true, warnings: 1},
		{name: "missing", file: `{"check-remote-auth-file":"` + filepath.Join(dir, "nope.json") + `"}`,
			wantErr: `invalid value for "check-remote-auth-file": unusable auth file: open ` + filepath.Join(dir, "nope.json") + `: no such file or directory`},
		{name: "relative", file: `{"check-remote-auth-file":"config.json"}`, wantErr: `"config.json" is not an absolute path`},
		{name: "malformed", file: `{"check-remote-auth-file":"` + bad + `"}`, wantErr: `auths["r"].auth is not base64`},
		{name: "both", file: `{"check-remote-auth-file":"` + good + `"}`, flags: []string{"--check-remote-auth-file", good}, wantErr: "specified both as a flag and in the configuration file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, fs := parseFlags(t, append([]string{"--config-file", writeConfig(t, tc.file)}, tc.flags...)...)
			err := LoadConfig(cfg, fs, rootEnv())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error shows a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (cfg.watchAuth != nil) != tc.loaded || len(cfg.warnings) != tc.warnings {
				t.Fatalf("loaded %v warnings %q", cfg.watchAuth != nil, cfg.warnings)
			}
		})
	}
}
