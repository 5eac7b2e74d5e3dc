package daemon

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestSecondDaemonIsRefused(t *testing.T) {
	root := t.TempDir()
	l, err := lockRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockRoot(root)
	want := "data-root " + root + " is in use by another wharfd (pid " + strconv.Itoa(os.Getpid()) + ")"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second lock: %v, want %q", err, want)
	}
	if err := l.unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := lockRoot(root)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	_ = l2.unlock()
}
