package client

import (
	"os"
	"path/filepath"
	"strconv"
)

// HostEnv is the environment variable naming the daemon address.
const HostEnv = "WHARF_HOST"

// rootSocket is where wharfd listens when it runs as root.
const rootSocket = "/run/wharf/wharf.sock"

// Environment is what host resolution reads; os.Getenv/os.Geteuid in
// production, fixed values in tests.
type Environment struct {
	Getenv  func(string) string
	Geteuid func() int
}

// OSEnvironment reads the real process environment.
func OSEnvironment() Environment {
	return Environment{Getenv: os.Getenv, Geteuid: os.Geteuid}
}

// ResolveHost picks the daemon address: the -H flag, then $WHARF_HOST, then
// the default socket (root: /run/wharf/wharf.sock; otherwise
// $XDG_RUNTIME_DIR/wharf/wharf.sock, or $TMPDIR/wharf-UID/wharf.sock without
// it), the same rule as wharfd's.
func ResolveHost(flag string, env Environment) string {
	if flag != "" {
		return flag
	}
	if h := env.Getenv(HostEnv); h != "" {
		return h
	}
	return "unix://" + DefaultSocket(env)
}

// DefaultSocket is the socket path wharfd listens on by default.
func DefaultSocket(env Environment) string {
	if env.Geteuid() == 0 {
		return rootSocket
	}
	dir := env.Getenv("XDG_RUNTIME_DIR")
	if !filepath.IsAbs(dir) {
		// Without XDG_RUNTIME_DIR (e.g. a plain su session) wharfd listens in
		// a per-user directory under the temp dir: the same rule here.
		return filepath.Join(os.TempDir(), "wharf-"+strconv.Itoa(env.Geteuid()), "wharf.sock")
	}
	return filepath.Join(dir, "wharf", "wharf.sock")
}
