package daemon

import (
	"os"
	"path/filepath"

	"github.com/wharfproject/wharf/internal/privdir"
)

// Env is what the defaults depend on: the effective user and the XDG
// variables. OSEnv reads the real ones; tests build their own.
type Env struct {
	EUID   int
	Getenv func(string) string
	Home   string
}

// OSEnv returns the process's environment.
func OSEnv() Env {
	home, _ := os.UserHomeDir()
	return Env{EUID: os.Geteuid(), Getenv: os.Getenv, Home: home}
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

func (e Env) rootless() bool { return e.EUID != 0 }

// defaultRoot is /var/lib/wharf for root, else $XDG_DATA_HOME/wharf
// (~/.local/share/wharf).
func (e Env) defaultRoot() string {
	if !e.rootless() {
		return "/var/lib/wharf"
	}
	if d := e.getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "wharf")
	}
	return filepath.Join(e.Home, ".local", "share", "wharf")
}

// defaultSocket is /run/wharf/wharf.sock for root, else
// $XDG_RUNTIME_DIR/wharf/wharf.sock (/tmp/wharf-UID/wharf.sock without one):
// internal/privdir's rule, which the CLI dials by.
func (e Env) defaultSocket() string { return privdir.DefaultPath(e.EUID, e.getenv) }

// defaultConfigFile is /etc/wharf/daemon.json for root, else
// $XDG_CONFIG_HOME/wharf/daemon.json (~/.config/wharf/daemon.json), as
// rootless dockerd does; it is read only when it exists.
func (e Env) defaultConfigFile() string {
	if !e.rootless() {
		return "/etc/wharf/daemon.json"
	}
	if d := e.getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "wharf", "daemon.json")
	}
	if e.Home == "" {
		return ""
	}
	return filepath.Join(e.Home, ".config", "wharf", "daemon.json")
}

// defaultCertsDirs are /etc/wharf/certs.d and /etc/docker/certs.d, after
// $XDG_CONFIG_HOME/wharf/certs.d (~/.config/wharf/certs.d) when not root,
// so that a rootless user can set mirrors and certificates of their own.
func (e Env) defaultCertsDirs() []string {
	sys := []string{"/etc/wharf/certs.d", "/etc/docker/certs.d"}
	if !e.rootless() {
		return sys
	}
	if d := e.getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return append([]string{filepath.Join(d, "wharf", "certs.d")}, sys...)
	}
	if e.Home == "" {
		return sys
	}
	return append([]string{filepath.Join(e.Home, ".config", "wharf", "certs.d")}, sys...)
}
