package dockerconfig

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	registrytypes "github.com/moby/moby/api/types/registry"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestParseAuthFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		inline  map[string]registrytypes.AuthConfig
		helpers map[string]string
		wantErr string
	}{
		{name: "empty object", in: `{}`},
		{name: "auth field", in: `{"auths":{"r.example:5000":{"auth":"` + b64("u:p:with:colons") + `"}}}`,
			inline: map[string]registrytypes.AuthConfig{"r.example:5000": {Username: "u", Password: "p:with:colons", ServerAddress: "r.example:5000"}}},
		{name: "username and password", in: `{"auths":{"https://index.docker.io/v1/":{"username":"u","password":"p"}}}`,
			inline: map[string]registrytypes.AuthConfig{"https://index.docker.io/v1/": {Username: "u", Password: "p", ServerAddress: "https://index.docker.io/v1/"}}},
		{name: "auth wins over username", in: `{"auths":{"r":{"auth":"` + b64("a:b") + `","username":"x","password":"y"}}}`,
			inline: map[string]registrytypes.AuthConfig{"r": {Username: "a", Password: "b", ServerAddress: "r"}}},
		{name: "identity token", in: `{"auths":{"r":{"identitytoken":"it"}}}`,
			inline: map[string]registrytypes.AuthConfig{"r": {IdentityToken: "it", ServerAddress: "r"}}},
		{name: "registry token", in: `{"auths":{"r":{"registrytoken":"rt"}}}`,
			inline: map[string]registrytypes.AuthConfig{"r": {RegistryToken: "rt", ServerAddress: "r"}}},
		{name: "empty entry without a store is nothing", in: `{"auths":{"r":{}}}`},
		{name: "empty entry with a store asks it", in: `{"auths":{"r":{},"s":{"auth":"` + b64("a:b") + `"}},"credsStore":"pass"}`,
			inline:  map[string]registrytypes.AuthConfig{"s": {Username: "a", Password: "b", ServerAddress: "s"}},
			helpers: map[string]string{"r": "pass"}},
		{name: "credHelpers win over auths", in: `{"auths":{"r":{"auth":"` + b64("a:b") + `"}},"credHelpers":{"r":"ecr-login","q":"gcr"}}`,
			helpers: map[string]string{"r": "ecr-login", "q": "gcr"}},
		{name: "other keys ignored", in: `{"psFormat":"x","proxies":{"default":{}},"auths":{}}`},
		{name: "not json", in: `{"auths":`, wantErr: "invalid JSON"},
		{name: "auths not an object", in: `{"auths":[]}`, wantErr: "not a docker config.json"},
		{name: "bad base64", in: `{"auths":{"r":{"auth":"!!s3cret!!"}}}`, wantErr: `auths["r"].auth is not base64`},
		{name: "no colon", in: `{"auths":{"r":{"auth":"` + b64("s3cret") + `"}}}`, wantErr: "not base64 of user:password"},
		{name: "empty key", in: `{"auths":{"":{"auth":"` + b64("a:b") + `"}}}`, wantErr: "empty registry key"},
		{name: "helper with a path", in: `{"credHelpers":{"r":"../../bin/sh"}}`, wantErr: "a helper is named by the suffix"},
		{name: "empty helper", in: `{"credHelpers":{"r":""}}`, wantErr: "a helper is named by the suffix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if !errors.Is(err, ErrFile) {
					t.Errorf("err %v is not ErrFile", err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error shows a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.inline) != len(tc.inline) || len(f.helpers) != len(tc.helpers) {
				t.Fatalf("inline %d helpers %v, want %d and %v", len(f.inline), f.helpers, len(tc.inline), tc.helpers)
			}
			for k, v := range tc.inline {
				if f.inline[k] != v {
					t.Errorf("%s: %+v, want %+v", k, f.inline[k], v)
				}
			}
			for k, v := range tc.helpers {
				if f.helpers[k] != v {
					t.Errorf("helper of %s: %q, want %q", k, f.helpers[k], v)
				}
			}
		})
	}
}

// FuzzParseAuthFile: any input parses or is refused with ErrFile,
// never panics; a parsed set carries something, is keyed by its own
// ServerAddress, and String shows none of it.
func FuzzParseAuthFile(f *testing.F) {
	f.Add([]byte(`{"auths":{"r:5000":{"auth":"` + b64("u:pw") + `"}},"credHelpers":{"q":"x"},"credsStore":"y"}`))
	f.Add([]byte(`{"auths":{"r":{"identitytoken":"a","registrytoken":"b","username":"c","password":"d"}}}`))
	f.Add([]byte(`{"auths":{"r":{}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		af, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrFile) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		s := af.String()
		for k, ac := range af.inline {
			if ac.ServerAddress != k {
				t.Fatalf("set under %q names %q", k, ac.ServerAddress)
			}
			if ac == (registrytypes.AuthConfig{ServerAddress: k}) {
				t.Fatalf("empty set kept for %q", k)
			}
			for _, secret := range []string{ac.Password, ac.IdentityToken, ac.RegistryToken} {
				if len(secret) > 3 && strings.Contains(s, secret) {
					t.Fatalf("String %q shows a secret", s)
				}
			}
		}
		for k, name := range af.helpers {
			if name == "" || strings.ContainsAny(name, `/\`) {
				t.Fatalf("helper %q for %q accepted", name, k)
			}
		}
	})
}

// TestCredentialHelper runs real helper executables (shell scripts) the
// way docker does: `get`, the server address on stdin, JSON on stdout.
func TestCredentialHelper(t *testing.T) {
	hangPID := filepath.Join(t.TempDir(), "hang.pid")
	fakeHelper(t, "fake", `
[ "$1" = get ] || exit 9
read -r host
case "$host" in
  user.example) printf '{"ServerURL":"%s","Username":"bob","Secret":"hunter2"}' "$host" ;;
  token.example) printf '{"ServerURL":"%s","Username":"<token>","Secret":"idtok"}' "$host" ;;
  missing.example) printf 'credentials not found in native keychain'; exit 1 ;;
  broken.example) printf 'leaked-secret-in-output'; exit 3 ;;
  garbage.example) printf 'not json leaked-secret' ;;
  big.example) head -c 200000 /dev/zero ;;
  hang.example) echo $$ > '`+hangPID+`'; exec sleep 60 ;;
  *) exit 7 ;;
esac
`)
	for _, tc := range []struct {
		host              string
		found             bool
		user, pass, token string
		wantErr           string
	}{
		{host: "user.example", found: true, user: "bob", pass: "hunter2"},
		{host: "token.example", found: true, token: "idtok"},
		{host: "missing.example"},
		{host: "broken.example", wantErr: "exit status 3"},
		{host: "garbage.example", wantErr: "not the protocol's JSON"},
		{host: "big.example", wantErr: "larger than 65536 bytes"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			ac, found, err := HelperGet(context.Background(), "fake", tc.host)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrHelper) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "leaked-secret") {
					t.Errorf("the error quotes the helper's output: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if found != tc.found || ac.Username != tc.user || ac.Password != tc.pass || ac.IdentityToken != tc.token {
				t.Fatalf("found %v %+v", found, ac)
			}
			if found && ac.ServerAddress != tc.host {
				t.Errorf("bound to %q", ac.ServerAddress)
			}
		})
	}
	t.Run("hang is killed at the deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, _, err := HelperGet(ctx, "fake", "hang.example")
		if err == nil || !strings.Contains(err.Error(), "no answer in time") {
			t.Fatalf("err %v", err)
		}
		// An event, not a duration: the helper (a 60 s sleep) is gone when
		// HelperGet returns, killed and reaped, not left running.
		b, err := os.ReadFile(hangPID)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("the hanging helper (pid %d) is still there: %v", pid, err)
		}
	})
	t.Run("no such helper", func(t *testing.T) {
		_, _, err := HelperGet(context.Background(), "absent-helper-name", "x.example")
		if err == nil || !errors.Is(err, ErrHelper) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	body := []byte(`{"auths":{"r":{"auth":"` + b64("u:s3cret") + `"}}}`)
	if err := os.WriteFile(p, body, 0o600); err != nil {
		t.Fatal(err)
	}
	f, warn, err := Load(p)
	if err != nil || warn != "" || len(f.inline) != 1 {
		t.Fatalf("0600: %v %q %v", f, warn, err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	g, warn, err := Load(p)
	if err != nil || !strings.Contains(warn, "readable by group or others (mode 0644)") {
		t.Fatalf("0644: warning %q, err %v", warn, err)
	}
	if !f.Same(g) {
		t.Error("the same bytes read twice are not the same file")
	}
	if strings.Contains(f.String(), "s3cret") || strings.Contains(f.String(), "u") && strings.Contains(f.String(), b64("u:s3cret")) {
		t.Errorf("String shows a secret: %s", f)
	}
	if _, _, err := Load(filepath.Join(dir, "absent.json")); !errors.Is(err, os.ErrNotExist) || !errors.Is(err, ErrFile) {
		t.Errorf("missing: %v", err)
	}
	if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	if err := os.WriteFile(p, append([]byte(`{"x":"`), append(make([]byte, maxFile), '"', '}')...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(p); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("too large: %v", err)
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
