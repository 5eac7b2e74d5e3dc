package rootlock

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

// A second holder is refused (Unavailable, naming the pid that holds
// the root); after Release the root can be locked again.
func TestSecondHolderRefused(t *testing.T) {
	root := t.TempDir()
	l, err := Acquire(root)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(root)
	if !errdefs.IsUnavailable(err) || !strings.Contains(err.Error(), "(pid "+strconv.Itoa(os.Getpid())+")") {
		t.Fatalf("second lock: %v, want Unavailable naming pid %d", err, os.Getpid())
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := Acquire(root)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	_ = l2.Release()
}
