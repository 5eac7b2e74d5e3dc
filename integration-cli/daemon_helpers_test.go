package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"gopkg.in/check.v1"
)

// Daemon is one wharfd process on a temp data-root and unix socket.
type Daemon struct {
	Root    string // --data-root
	Sock    string // socket path
	Host    string // unix://Sock
	LogPath string // stdout+stderr of wharfd
	// Home is a per-daemon HOME/DOCKER_CONFIG for CLI runs (credential store).
	Home string
	Args []string // extra flags given to Start
	// Bin is the wharfd binary Start runs; "" is the one under test
	// (another is an older wharf's: store_upgrade_test.go).
	Bin string
	// Env is added to the test's environment for wharfd (a later entry of
	// a name wins), so that no test changes the whole process's.
	Env []string

	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

// Timeouts: wharfd answers /_ping in milliseconds; these bound a loaded CI box.
const (
	daemonReadyTimeout = 20 * time.Second
	daemonStopTimeout  = 15 * time.Second
)

// NewDaemon prepares (does not start) a wharfd with fresh directories.
func NewDaemon(c *check.C) *Daemon {
	needBinaries(c)
	base := c.MkDir()
	// Unix socket paths are limited to 108 bytes; check's temp dirs are short
	// unless TMPDIR is long, then fall back to a short dir under /tmp.
	sockDir := c.MkDir()
	if len(sockDir) > 80 {
		d, err := os.MkdirTemp("/tmp", "wd")
		c.Assert(err, check.IsNil)
		sockDir = d
	}
	d := &Daemon{
		Root:    filepath.Join(base, "root"),
		Sock:    filepath.Join(sockDir, "w.sock"),
		LogPath: daemonLogPath(c, base),
		Home:    filepath.Join(base, "home"),
	}
	d.Host = "unix://" + d.Sock
	c.Assert(os.MkdirAll(d.Home, 0o700), check.IsNil)
	return d
}

// StartDaemon prepares and starts a wharfd, failing the test when it does not come up.
func StartDaemon(c *check.C, args ...string) *Daemon {
	d := NewDaemon(c)
	d.Start(c, args...)
	return d
}

// Start starts wharfd and waits for /_ping.
func (d *Daemon) Start(c *check.C, args ...string) {
	if err := d.StartWithError(args...); err != nil {
		c.Fatalf("wharfd did not start: %v\n--- wharfd log ---\n%s", err, d.Log())
	}
}

// StartWithError starts wharfd; it returns an error when wharfd exits or
// does not answer /_ping in time.
func (d *Daemon) StartWithError(args ...string) error {
	d.Args = args
	full := append([]string{"-H", d.Host, "--data-root", d.Root, "-D"}, args...)
	logf, err := os.OpenFile(d.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	bin := bins.Wharfd
	if d.Bin != "" {
		bin = d.Bin
	}
	cmd := exec.Command(bin, full...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(append(os.Environ(), "HOME="+d.Home, "XDG_CONFIG_HOME="+filepath.Join(d.Home, ".config")), d.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	d.cmd, d.done = cmd, make(chan struct{})
	go func(done chan struct{}) { d.waitErr = cmd.Wait(); close(done) }(d.done)
	return d.waitReady()
}

func (d *Daemon) waitReady() error {
	client := d.HTTPClient()
	client.Timeout = time.Second
	exited, err := waitPing(client, "http://wharfd/_ping", d.done, daemonReadyTimeout, 25*time.Millisecond)
	switch {
	case exited:
		return fmt.Errorf("wharfd exited: %v", d.waitErr)
	case err != nil:
		d.Kill()
		return fmt.Errorf("no answer on %s/_ping within %s (last: %v)", d.Host, daemonReadyTimeout, err)
	}
	return nil
}

// waitPing polls GET url every poll until it answers 200 (nil), the
// process behind it ends (done closed: exited), or timeout passes (the
// last error or status).
func waitPing(client *http.Client, url string, done <-chan struct{}, timeout, poll time.Duration) (exited bool, err error) {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return false, nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		select {
		case <-done:
			return true, nil
		case <-time.After(poll):
		}
		if time.Now().After(deadline) {
			return false, err
		}
	}
}

// Exited waits up to timeout for wharfd to exit on its own and returns its
// exit error (nil = status 0); ok is false when it is still running.
func (d *Daemon) Exited(timeout time.Duration) (err error, ok bool) {
	select {
	case <-d.done:
		return d.waitErr, true
	case <-time.After(timeout):
		return nil, false
	}
}

// Stop sends SIGTERM and checks wharfd exits with status 0.
func (d *Daemon) Stop(c *check.C) {
	if d.cmd == nil {
		return
	}
	select {
	case <-d.done:
		c.Fatalf("wharfd had already exited: %v\n%s", d.waitErr, d.Log())
	default:
	}
	c.Assert(d.cmd.Process.Signal(syscall.SIGTERM), check.IsNil)
	err, ok := d.Exited(daemonStopTimeout)
	if !ok {
		d.Kill()
		c.Fatalf("wharfd did not exit within %s of SIGTERM\n%s", daemonStopTimeout, d.Log())
	}
	d.cmd = nil
	c.Assert(err, check.IsNil, check.Commentf("wharfd exit after SIGTERM\n%s", d.Log()))
}

// Kill ends wharfd without checks (cleanup after a failure).
func (d *Daemon) Kill() {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	select {
	case <-d.done:
	default:
		_ = d.cmd.Process.Kill()
		<-d.done
	}
	d.cmd = nil
}

// Restart stops wharfd and starts it again with the same flags.
func (d *Daemon) Restart(c *check.C) {
	d.Stop(c)
	d.Start(c, d.Args...)
}

// Log is wharfd's output so far.
func (d *Daemon) Log() string {
	b, _ := os.ReadFile(d.LogPath)
	return string(b)
}

// HTTPClient talks to wharfd over its socket; any host name works.
func (d *Daemon) HTTPClient() *http.Client {
	sock := d.Sock
	return &http.Client{
		Timeout: 2 * time.Minute,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var dl net.Dialer
				return dl.DialContext(ctx, "unix", sock)
			},
			DisableCompression: true,
		},
	}
}

// isExitError reports whether err is a non-zero exit status.
func isExitError(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// containsAny reports whether s contains one of subs.
func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
