package privdir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheck(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	const me, other = 1000, 65534
	base := t.TempDir()
	mk := func(name string, mode os.FileMode, uid int) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, -1); err != nil {
			t.Fatal(err)
		}
		return p
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(mk("target", 0o700, me), link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dir  string
		ok   bool
	}{
		{"mine 0700", mk("mine", 0o700, me), true},
		{"root's 0755", mk("roots", 0o755, 0), true},
		{"root's sticky 1777, like /tmp", mk("tmp", 0o1777|os.ModeSticky, 0), true},
		{"another user's", mk("theirs", 0o700, other), false},
		{"mine, group-writable", mk("grp", 0o770, me), false},
		{"mine, world-writable", mk("world", 0o777, me), false},
		{"a symbolic link", link, false},
		{"a file", file, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.dir, me)
			var se *Error
			switch {
			case tc.ok && err != nil:
				t.Fatalf("Check(%s) = %v, want nil", tc.dir, err)
			case !tc.ok && !errors.As(err, &se):
				t.Fatalf("Check(%s) = %v, want *Error", tc.dir, err)
			}
		})
	}
	if err := Check(filepath.Join(base, "missing"), me); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing directory: %v, want ErrNotExist", err)
	}
}

func TestDefaultPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		euid int
		env  map[string]string
		want string
	}{
		{0, map[string]string{"XDG_RUNTIME_DIR": "/run/user/0"}, RootSocket},
		{1000, map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, "/run/user/1000/wharf/wharf.sock"},
		{1000, map[string]string{"XDG_RUNTIME_DIR": "relative"}, filepath.Join(os.TempDir(), "wharf-1000", "wharf.sock")},
		{1000, nil, filepath.Join(os.TempDir(), "wharf-1000", "wharf.sock")},
	} {
		if got := DefaultPath(tc.euid, env(tc.env)); got != tc.want {
			t.Errorf("DefaultPath(%d, %v) = %s, want %s", tc.euid, tc.env, got, tc.want)
		}
	}
}
