package client

import (
	"os"
	"path/filepath"
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
// $XDG_RUNTIME_DIR/wharf/wharf.sock).
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
	if dir == "" {
		// Without XDG_RUNTIME_DIR (e.g. a plain su session) fall back to the
		// root socket, as the daemon does for a shared system instance.
		return rootSocket
	}
	return filepath.Join(dir, "wharf", "wharf.sock")
}
