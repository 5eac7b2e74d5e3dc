package dockerconfig

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	registrytypes "github.com/moby/moby/api/types/registry"
)

// TestConfigPutGetDelete: login writes auths as docker does, keeping the
// keys it does not know, mode 0600; logout removes it.
func TestConfigPutGetDelete(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "config.json")
	c, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, found, err := c.Get(context.Background(), "r.example"); found || err != nil {
		t.Fatalf("missing file: %v %v", found, err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"psFormat":"x","auths":{"https://old.example/v1/":{"auth":"`+b64("o:po")+`","email":"o@example"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err = Open(p); err != nil {
		t.Fatal(err)
	}
	if ac, found, err := c.Get(context.Background(), "old.example"); !found || err != nil || ac.Username != "o" || ac.ServerAddress != "old.example" {
		t.Fatalf("a key with scheme and path: %+v %v %v", ac, found, err)
	}
	if err := c.Put(context.Background(), "r.example", registrytypes.AuthConfig{Username: "u:x", Password: "p"}); !errors.Is(err, ErrBadCredential) {
		t.Fatalf("a colon in the username: %v", err)
	}
	if err := c.Put(context.Background(), "r.example", registrytypes.AuthConfig{Username: "u", Password: "p"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	b, _ := os.ReadFile(p)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || string(raw["psFormat"]) != `"x"` || !strings.Contains(string(raw["auths"]), `"o@example"`) {
		t.Fatalf("unknown keys not kept: %s", b)
	}
	c2, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if ac, found, err := c2.Get(context.Background(), "r.example"); !found || err != nil || ac.Username != "u" || ac.Password != "p" {
		t.Fatalf("read back: %+v %v %v", ac, found, err)
	}
	if err := c2.Delete(context.Background(), "r.example"); err != nil {
		t.Fatal(err)
	}
	c3, _ := Open(p)
	if _, found, _ := c3.Get(context.Background(), "r.example"); found {
		t.Fatal("still there after Delete")
	}
}

// TestConfigHelpers: credHelpers, then credsStore, hold the set; a
// missing helper is an error, not an anonymous request.
func TestConfigHelpers(t *testing.T) {
	dir := fakeHelper(t, "rec", `
case "$1" in
  get) read -r host; [ -f "$STATE" ] && cat "$STATE" || { printf 'credentials not found in native keychain'; exit 1; } ;;
  store) cat > "$STATE" ;;
  erase) rm -f "$STATE" ;;
esac
`)
	t.Setenv("STATE", filepath.Join(dir, "state"))
	p := filepath.Join(t.TempDir(), "config.json")
	const body = `{"credHelpers":{"h.example":"rec","gone.example":"wharf-test-missing-helper"}}`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, found, err := c.Get(ctx, "h.example"); found || err != nil {
		t.Fatalf("empty helper: %v %v", found, err)
	}
	if err := c.Put(ctx, "h.example", registrytypes.AuthConfig{Username: "u", IdentityToken: "it"}); err != nil {
		t.Fatal(err)
	}
	if ac, found, err := c.Get(ctx, "h.example"); !found || err != nil || ac.IdentityToken != "it" {
		t.Fatalf("stored: %+v %v %v", ac, found, err)
	}
	if err := c.Delete(ctx, "h.example"); err != nil {
		t.Fatal(err)
	}
	if _, found, err := c.Get(ctx, "h.example"); found || err != nil {
		t.Fatalf("erased: %v %v", found, err)
	}
	if _, _, err := c.Get(ctx, "gone.example"); !errors.Is(err, ErrHelper) {
		t.Fatalf("missing helper: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != body {
		t.Fatalf("the file was rewritten for a helper's set: %s", b)
	}
}
