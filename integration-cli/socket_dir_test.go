package integration

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The API socket's directory decides who may receive the CLI's requests, and
// they carry registry credentials. Without XDG_RUNTIME_DIR the rootless
// default is $TMPDIR/wharf-UID/wharf.sock, a name any local user can create
// first under the shared temp dir. These run the real binaries the way the
// two sides of that attack meet them.

const (
	victimUID   = 65534 // nobody: the user running wharf
	attackerUID = 65533 // another local user
)

// shareableDir is a fresh directory under /tmp that other users can enter
// (MkdirTemp makes 0700 ones), removed at the end of the test.
func shareableDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", "wsd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func needRootAndBinaries(t *testing.T) {
	t.Helper()
	if bins.Err != nil {
		t.Fatalf("wharf binaries unavailable: %v", bins.Err)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as two other users")
	}
}

// TestCLIRefusesSocketDirOfAnotherUser: another user made the victim's
// default socket directory and listens in it. wharf must not dial it.
func TestCLIRefusesSocketDirOfAnotherUser(t *testing.T) {
	needRootAndBinaries(t)
	tmp := shareableDir(t)
	// The victim's copy of the CLI, where the victim can run it.
	cli := filepath.Join(tmp, "wharf")
	b, err := os.ReadFile(bins.Wharf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cli, b, 0o755); err != nil {
		t.Fatal(err)
	}
	sockDir := filepath.Join(tmp, "wharf-"+strconv.Itoa(victimUID))
	if err := os.Mkdir(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(sockDir, attackerUID, attackerUID); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(sockDir, "wharf.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()

	cmd := exec.Command(cli, "images")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + tmp, "TMPDIR=" + tmp}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: victimUID, Gid: victimUID}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if err == nil {
		t.Fatalf("wharf images succeeded against another user's socket directory:\n%s", out.String())
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("wharf dialled the socket in %s (%d connections), owned by uid %d:\n%s", sockDir, n, attackerUID, out.String())
	}
	if !strings.Contains(out.String(), sockDir) || !strings.Contains(out.String(), "owned by uid") {
		t.Fatalf("the error does not name the directory and its owner:\n%s", out.String())
	}
}

// TestDaemonRefusesSocketDirOfAnotherUser: wharfd must not listen where
// another user could swap its socket for theirs.
func TestDaemonRefusesSocketDirOfAnotherUser(t *testing.T) {
	needRootAndBinaries(t)
	tmp := shareableDir(t)
	sockDir := filepath.Join(tmp, "s")
	if err := os.Mkdir(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(sockDir, attackerUID, attackerUID); err != nil {
		t.Fatal(err)
	}
	wharfdRefuses(t, tmp, []string{"-H", "unix://" + filepath.Join(sockDir, "w.sock"), "--data-root", filepath.Join(tmp, "root")},
		sockDir, "owned by uid", "XDG_RUNTIME_DIR")
	if _, err := os.Lstat(filepath.Join(sockDir, "w.sock")); err == nil {
		t.Fatalf("wharfd created its socket in %s", sockDir)
	}
}

// TestDaemonRefusesDataRootInAnotherUsersDirectory: a data-root wharfd
// creates must not sit where another user could rename it away.
func TestDaemonRefusesDataRootInAnotherUsersDirectory(t *testing.T) {
	needRootAndBinaries(t)
	tmp := shareableDir(t)
	parent := filepath.Join(tmp, "theirs")
	if err := os.Mkdir(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(parent, attackerUID, attackerUID); err != nil {
		t.Fatal(err)
	}
	sockDir := filepath.Join(tmp, "s")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	wharfdRefuses(t, tmp, []string{"-H", "unix://" + filepath.Join(sockDir, "w.sock"), "--data-root", filepath.Join(parent, "root")},
		parent, "owned by uid", "--data-root")
	if _, err := os.Lstat(filepath.Join(parent, "root")); err == nil {
		t.Fatalf("wharfd created its data-root in %s", parent)
	}
}

// wharfdRefuses starts wharfd with args and wants it to exit non-zero on
// its own, its output naming every one of want (the directory, what is
// wrong with it, the fix). A wharfd still running after daemonReadyTimeout
// (it started where it should have refused) fails the test.
func wharfdRefuses(t *testing.T, home string, args []string, want ...string) {
	t.Helper()
	cmd := exec.Command(bins.Wharfd, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("wharfd exited 0:\n%s", out.String())
		}
	case <-time.After(daemonReadyTimeout):
		cmd.Process.Kill()
		<-done
		t.Fatalf("wharfd is still running %s after start in a directory of uid %d:\n%s", daemonReadyTimeout, attackerUID, out.String())
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Fatalf("the error does not say %q:\n%s", w, out.String())
		}
	}
}
