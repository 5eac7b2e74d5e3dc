// Package privdir is the one rule, shared by wharfd and the wharf CLI, for
// a directory that must be the user's alone: the one that holds the API's
// unix socket, and the parent of a data-root wharfd creates.
//
// Whoever controls the socket's directory can replace the socket with their own and
// receive what the CLI sends (X-Registry-Auth and X-Registry-Config carry
// registry credentials). Without XDG_RUNTIME_DIR a rootless daemon listens
// under the shared temp dir (/tmp/wharf-UID), where any local user can create
// the directory first. So the directory must be a real directory (not a
// link), owned by the user or by root, and writable by nobody else — unless
// it has the sticky bit, as /tmp has, which stops others from removing or
// renaming what is in it. Whoever controls a data-root's parent can
// likewise rename the data-root away and put their own in its place.
package privdir

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

// Error says why a directory is not safe to use, and what to do.
type Error struct {
	What   string // "socket directory", "data-root's parent"
	Dir    string
	Reason string
	Risk   string // what another user could do there
	Fix    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s %s: %s; %s", e.What, e.Dir, e.Reason, e.Risk, e.Fix)
}

// For the socket's directory and a data-root's parent: what another user
// could do there, and the fix.
const (
	socketRisk = "another user could replace the socket and receive registry credentials"
	socketFix  = "remove it, or set XDG_RUNTIME_DIR (or -H unix://PATH) to a directory of your own"
	rootRisk   = "another user could replace the data-root"
	rootFix    = "choose a --data-root whose parent is yours (or root's) and not writable by others"
)

// Check returns an *Error when dir is not safe for euid's socket (see the
// package comment), or the error of reading it.
func Check(dir string, euid int) error {
	return check(dir, euid, "socket directory", socketRisk, socketFix)
}

// CheckRootParent is Check for the parent of a data-root wharfd creates.
func CheckRootParent(dir string, euid int) error {
	return check(dir, euid, "data-root's parent", rootRisk, rootFix)
}

func check(dir string, euid int, what, risk, fix string) error {
	bad := func(reason string) error { return &Error{What: what, Dir: dir, Reason: reason, Risk: risk, Fix: fix} }
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return bad("is a symbolic link")
	}
	if !fi.IsDir() {
		return bad("is not a directory")
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil // no owner to check on this system
	}
	if int(st.Uid) != euid && st.Uid != 0 {
		return bad(fmt.Sprintf("is owned by uid %d, not by uid %d or root", st.Uid, euid))
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return bad(fmt.Sprintf("is writable by others (mode %04o) and not sticky", fi.Mode().Perm()))
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
