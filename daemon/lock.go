package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gofrs/flock"

	"github.com/wharfproject/wharf/internal/privdir"
)

// rootLock is the exclusive lock on a data-root: two daemons writing one OCI
// layout would corrupt it.
type rootLock struct {
	fl   *flock.Flock
	path string
}

// lockRoot takes <root>/wharf.lock without waiting and writes our pid into
// it so that a second daemon can say who holds it.
func lockRoot(root string) (*rootLock, error) {
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
		// A data-root wharfd creates goes only where no other user could
		// rename it away and put theirs in its place (internal/privdir).
		parent := filepath.Dir(root)
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return nil, fmt.Errorf("creating data-root: %w", err)
		}
		if err := privdir.CheckRootParent(parent, os.Geteuid()); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("creating data-root: %w", err)
	}
	path := filepath.Join(root, "wharf.lock")
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
		return nil, fmt.Errorf("data-root %s is in use by another wharfd (pid %s)", root, pid)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return &rootLock{fl: fl, path: path}, nil
}

// unlock releases the lock; the file stays (removing it would race with a
// daemon that has just opened it).
func (l *rootLock) unlock() error {
	_ = os.Truncate(l.path, 0)
	return l.fl.Unlock()
}
