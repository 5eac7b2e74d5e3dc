// Package sockdir is the one rule, shared by wharfd and the wharf CLI, for
// the directory that holds the API's unix socket.
//
// Whoever controls that directory can replace the socket with their own and
// receive what the CLI sends (X-Registry-Auth and X-Registry-Config carry
// registry credentials). Without XDG_RUNTIME_DIR a rootless daemon listens
// under the shared temp dir (/tmp/wharf-UID), where any local user can create
// the directory first. So the directory must be a real directory (not a
// link), owned by the user or by root, and writable by nobody else — unless
// it has the sticky bit, as /tmp has, which stops others from removing or
// renaming what is in it.
package sockdir

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// RootSocket is root's default socket, as the docker group's is /run/docker.sock.
const RootSocket = "/run/wharf/wharf.sock"

// DefaultPath is the socket wharfd listens on and wharf dials by default:
// RootSocket for root; otherwise $XDG_RUNTIME_DIR/wharf/wharf.sock, or
// $TMPDIR/wharf-UID/wharf.sock without an absolute XDG_RUNTIME_DIR (a plain
// su session has none).
func DefaultPath(euid int, getenv func(string) string) string {
	if euid == 0 {
		return RootSocket
	}
	if d := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "wharf", "wharf.sock")
	}
	return filepath.Join(os.TempDir(), "wharf-"+strconv.Itoa(euid), "wharf.sock")
}

// Error says why a socket directory is not safe to use.
type Error struct {
	Dir    string
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("socket directory %s %s: another user could replace the socket and receive registry credentials", e.Dir, e.Reason)
}

// Check returns an *Error when dir is not safe for euid's socket (see the
// package comment), or the error of reading it.
func Check(dir string, euid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &Error{Dir: dir, Reason: "is a symbolic link"}
	}
	if !fi.IsDir() {
		return &Error{Dir: dir, Reason: "is not a directory"}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil // no owner to check on this system
	}
	if int(st.Uid) != euid && st.Uid != 0 {
		return &Error{Dir: dir, Reason: fmt.Sprintf("is owned by uid %d, not by uid %d or root", st.Uid, euid)}
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return &Error{Dir: dir, Reason: fmt.Sprintf("is writable by others (mode %04o) and not sticky", fi.Mode().Perm())}
	}
	return nil
}

// Prepare makes dir for euid's socket when it is missing — 0755 for root, so
// that the wharf group reaches the 0660 socket, 0700 for anyone else — and
// then checks it, whoever made it.
func Prepare(dir string, euid int) error {
	mode := fs.FileMode(0o700)
	if euid == 0 {
		mode = 0o755
	}
	if err := os.MkdirAll(dir, mode); err != nil {
		return fmt.Errorf("creating socket directory: %w", err)
	}
	return Check(dir, euid)
}
