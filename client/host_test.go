package client

import (
	"os"
	"path/filepath"
	"testing"
)

func TestResolveHost(t *testing.T) {
	env := func(vars map[string]string, uid int) Environment {
		return Environment{Getenv: func(k string) string { return vars[k] }, Geteuid: func() int { return uid }}
	}
	tests := []struct {
		name string
		flag string
		env  Environment
		want string
	}{
		{"flag wins", "tcp://1.2.3.4:1", env(map[string]string{"WHARF_HOST": "unix:///x"}, 0), "tcp://1.2.3.4:1"},
		{"env next", "", env(map[string]string{"WHARF_HOST": "unix:///x"}, 0), "unix:///x"},
		{"root default", "", env(map[string]string{"XDG_RUNTIME_DIR": "/run/user/1"}, 0), "unix:///run/wharf/wharf.sock"},
		{"user default", "", env(map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, 1000), "unix:///run/user/1000/wharf/wharf.sock"},
		{"user without runtime dir", "", env(map[string]string{}, 1000), "unix://" + filepath.Join(os.TempDir(), "wharf-1000", "wharf.sock")},
	}
	for _, tt := range tests {
		if got := ResolveHost(tt.flag, tt.env); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestParseHost(t *testing.T) {
	tests := []struct {
		in, proto, addr string
		bad             bool
	}{
		{"unix:///run/wharf/wharf.sock", "unix", "/run/wharf/wharf.sock", false},
		{"/tmp/w.sock", "unix", "/tmp/w.sock", false},
		{"tcp://127.0.0.1:2375", "tcp", "127.0.0.1:2375", false},
		{"ssh://h", "", "", true},
		{"", "", "", true},
		{"unix://", "", "", true},
	}
	for _, tt := range tests {
		p, a, err := ParseHost(tt.in)
		if (err != nil) != tt.bad || p != tt.proto || a != tt.addr {
			t.Errorf("ParseHost(%q) = %q %q %v", tt.in, p, a, err)
		}
	}
}
