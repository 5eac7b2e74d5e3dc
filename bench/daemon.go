//go:build bench

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// wharfd is one daemon on its own data-root and unix socket.
type wharfd struct {
	root, sock, logPath string
	cmd                 *exec.Cmd
	done                chan struct{}
	http                *http.Client
}

// pingDeadline bounds startWharfd's wait for /_ping (case 11 raises it for
// the first start on a store of 50,000 images: the migration).
var pingDeadline = 30 * time.Second

// startWharfd starts bin/wharfd on root (created when missing) and waits for /_ping.
func startWharfd(bin, root string, args ...string) (*wharfd, error) {
	dir, err := os.MkdirTemp("", "wb")
	if err != nil {
		return nil, err
	}
	d := &wharfd{root: root, sock: filepath.Join(dir, "w.sock"), logPath: filepath.Join(dir, "wharfd.log")}
	logf, err := os.Create(d.logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	full := append([]string{"-H", "unix://" + d.sock, "--data-root", root, "--log-level", "warn"}, args...)
	d.cmd = exec.Command(bin, full...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"))
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	d.done = make(chan struct{})
	go func() { d.cmd.Wait(); close(d.done) }()
	d.http = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", d.sock)
		},
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		DisableCompression:  true,
	}}
	deadline := time.Now().Add(pingDeadline)
	for {
		resp, err := d.http.Get("http://wharfd/_ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d, nil
			}
		}
		select {
		case <-d.done:
			return nil, fmt.Errorf("wharfd exited:\n%s", d.logTail())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("wharfd did not answer /_ping in %s:\n%s", pingDeadline, d.logTail())
		}
	}
}

func (d *wharfd) logTail() string {
	b, _ := os.ReadFile(d.logPath)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// stop sends SIGTERM and waits (SIGKILL after 15 s).
func (d *wharfd) stop() {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
	d.http.CloseIdleConnections()
	os.RemoveAll(filepath.Dir(d.sock))
}

// peakRSS is VmHWM of the daemon process, in bytes.
func (d *wharfd) peakRSS() (int64, error) {
	return procStatus(d.cmd.Process.Pid, "VmHWM")
}

// cpuTime is the daemon's user+system CPU time so far (/proc/PID/stat,
// clock ticks of 10 ms).
func (d *wharfd) cpuTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat: no command")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc stat: utime %q stime %q", f[11], f[12])
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

func procStatus(pid int, key string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				break
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, err
			}
			return n << 10, nil // kB
		}
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", key, pid)
}

// do sends one API request and returns the status and body.
func (d *wharfd) do(ctx context.Context, method, path string, hdr map[string]string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://wharfd"+path, body)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// stream POSTs path (with header) to d and calls line with each line of the
// answer as it arrives; it returns the time from the request to the end of
// the stream. A status other than 200 is an error naming what.
func (d *wharfd) stream(ctx context.Context, what, path string, header http.Header, line func([]byte) error) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://wharfd"+path, nil)
	if err != nil {
		return 0, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	start := time.Now()
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("%s: %d %s", what, resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if err := line(sc.Bytes()); err != nil {
			return 0, err
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
