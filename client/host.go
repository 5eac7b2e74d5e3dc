package client

import (
	"os"

	"github.com/wharfproject/wharf/internal/privdir"
)

// HostEnv is the environment variable naming the daemon address.
const HostEnv = "WHARF_HOST"

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

// DefaultSocket is the socket path wharfd listens on by default (the one
// rule is internal/privdir's).
func DefaultSocket(env Environment) string {
	return privdir.DefaultPath(env.Geteuid(), env.Getenv)
}
