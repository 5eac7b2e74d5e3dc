// Package rootlock is the one exclusive lock on a data-root: two
// processes writing one OCI layout and one meta.db would corrupt them.
// It is a flock on <root>/wharf.lock, which holds the pid of its owner so
// that the process refused can say who holds it. The daemon takes it
// before anything touches the root and hands it to the store; a store
// opened alone (tests, tools) takes it itself.
package rootlock

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/errdefs"
	"github.com/gofrs/flock"
)

// File is the lock's name under the data-root.
const File = "wharf.lock"

// Lock is a held data-root lock.
type Lock struct {
	fl   *flock.Flock
	path string
	root string
}

// Acquire takes root's lock without waiting (root must exist) and writes
// this process's pid into it. A root locked by another process is
// Unavailable, naming the pid that holds it.
func Acquire(root string) (*Lock, error) {
	path := filepath.Join(root, File)
	fl := flock.New(path)
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking data-root %s: %w", root, err)
	}
	if !ok {
		pid := "unknown"
		if b, err := os.ReadFile(path); err == nil {
			if p := string(bytes.TrimSpace(b)); p != "" {
				pid = p
			}
		}
		return nil, fmt.Errorf("data-root %s is in use by another wharfd (pid %s)%.0w", root, pid, errdefs.ErrUnavailable)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return &Lock{fl: fl, path: path, root: root}, nil
}

// Root is the data-root the lock holds.
func (l *Lock) Root() string { return l.root }

// Release releases the lock; the file stays (removing it would race with
// a process that has just opened it), emptied of the pid.
func (l *Lock) Release() error {
	_ = os.Truncate(l.path, 0)
	return l.fl.Unlock()
}
