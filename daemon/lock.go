package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wharfproject/wharf/internal/privdir"
	"github.com/wharfproject/wharf/internal/rootlock"
)

// rootLock is the exclusive lock on a data-root (internal/rootlock), which
// the daemon takes first and hands to the store.
type rootLock struct{ *rootlock.Lock }

// lockRoot creates the data-root when needed and takes its lock without
// waiting.
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
	l, err := rootlock.Acquire(root)
	if err != nil {
		return nil, err
	}
	return &rootLock{l}, nil
}

// unlock releases the lock.
func (l *rootLock) unlock() error { return l.Release() }
