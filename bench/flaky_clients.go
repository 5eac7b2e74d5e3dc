//go:build bench

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// flakyWharf pulls with a fresh wharfd on a temp data-root each time, through
// its API (POST /images/create). The proxy is on 127.0.0.1, insecure for
// wharfd by default (registry/hosts: loopback is always insecure).
func flakyWharf(bin string) *flakyClient {
	return &flakyClient{name: "wharf", pull: func(ctx context.Context, ref string) error {
		root, err := os.MkdirTemp("", "wharf-bench-root-")
		if err != nil {
			return err
		}
		d, err := startWharfd(bin, root)
		if err != nil {
			os.RemoveAll(root)
			return err
		}
		defer dropDaemon(d, root)
		i := strings.LastIndexByte(ref, ':') // HOST:PORT/repo:tag
		name, tag := ref[:i], ref[i+1:]
		q := url.Values{"fromImage": {name}, "tag": {tag}}
		_, err = d.stream(ctx, "pull "+ref, "/v1.50/images/create?"+q.Encode(), nil, func(line []byte) error {
			if m := jsonError(line); m != "" {
				return errors.New(m)
			}
			return nil
		})
		return err
	}}
}

// jsonError is the "error" of one line of a pull's progress stream.
func jsonError(line []byte) string {
	const key = `"error":`
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return ""
	}
	rest := bytes.TrimSpace(line[i+len(key):])
	if len(rest) == 0 || rest[0] != '"' {
		return ""
	}
	// The value is a JSON string: find its closing quote.
	for j := 1; j < len(rest); j++ {
		switch rest[j] {
		case '\\':
			j++
		case '"':
			if s, err := strconv.Unquote(string(rest[:j+1])); err == nil {
				return s
			}
			return string(rest[1:j])
		}
	}
	return ""
}

// flakyCrane is `crane pull --insecure --format=oci REF DIR` into a fresh directory.
func flakyCrane(ctx context.Context, root string) *flakyClient {
	c := &flakyClient{name: "crane"}
	bin, err := craneBin(ctx, root)
	if err != nil {
		c.skip = "crane unavailable: " + firstLine(err.Error())
		return c
	}
	c.pull = func(ctx context.Context, ref string) error {
		return runInTemp(ctx, bin, func(dir string) []string {
			return []string{"pull", "--insecure", "--format=oci", ref, dir}
		})
	}
	return c
}

// flakySkopeo is `skopeo copy --src-tls-verify=false docker://REF oci:DIR`.
func flakySkopeo(ctx context.Context) *flakyClient {
	c := &flakyClient{name: "skopeo"}
	bin, err := skopeoBin(ctx)
	if err != nil {
		c.skip = "skopeo unavailable: " + firstLine(err.Error())
		return c
	}
	c.pull = func(ctx context.Context, ref string) error {
		return runInTemp(ctx, bin, func(dir string) []string {
			return []string{"copy", "--quiet", "--src-tls-verify=false", "docker://" + ref, "oci:" + dir + ":1"}
		})
	}
	return c
}

// runInTemp runs bin with args(DIR) for a DIR in a new temp directory,
// removed afterwards; a failure's error is the tool's stderr.
func runInTemp(ctx context.Context, bin string, args func(dir string) []string) error {
	parent, err := os.MkdirTemp("", "wharf-bench-flaky-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(parent)
	cmd := exec.CommandContext(ctx, bin, args(filepath.Join(parent, "layout"))...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+parent) // no credentials of the machine's user
	return runStderr(cmd)
}

// runStderr runs cmd; a failure's error is its stderr when it said anything.
func runStderr(cmd *exec.Cmd) error {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if s := strings.TrimSpace(stderr.String()); s != "" {
			return errors.New(s)
		}
		return err
	}
	return nil
}

// flakyDockerd starts the bench's own dockerd 20.10 (when installed, and
// when the bench runs as root) on temp dirs, with the proxy as an insecure
// registry, and pulls with the docker CLI through its socket. A dockerd
// that is missing, or cannot run here, gives a client that is skipped with
// the reason; a pull that fails is a "fails" cell, like any client's.
func flakyDockerd(ctx context.Context, proxyHost string) (*flakyClient, error) {
	c := &flakyClient{name: "dockerd 20.10"}
	bin, err := exec.LookPath("dockerd")
	if err != nil {
		c.skip = "dockerd not installed (apt-get install docker.io)"
		return c, nil
	}
	if os.Geteuid() != 0 {
		c.skip = fmt.Sprintf("dockerd needs root (the bench runs as uid %d)", os.Geteuid())
		return c, nil
	}
	// The CLI of the same package (/usr/bin/docker beside /usr/sbin/dockerd
	// in Debian's docker.io) when there is one; else any docker on PATH
	// (the API version is negotiated).
	cli := filepath.Join(filepath.Dir(filepath.Dir(bin)), "bin", "docker")
	if _, err := os.Stat(cli); err != nil {
		if cli, err = exec.LookPath("docker"); err != nil {
			c.skip = "dockerd installed, but no docker CLI"
			return c, nil
		}
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		c.skip = "dockerd --version: " + err.Error()
		return c, nil
	}
	version := strings.TrimSpace(string(out))
	if !strings.Contains(version, "version 20.10.") {
		c.name = "dockerd " + strings.TrimPrefix(strings.SplitN(version, ",", 2)[0], "Docker version ")
	}
	tmp, err := os.MkdirTemp("", "wharf-bench-dockerd-")
	if err != nil {
		return nil, err
	}
	d := &dockerdProc{tmp: tmp, cli: cli, host: "unix://" + filepath.Join(tmp, "docker.sock")}
	if err := d.start(ctx, bin, proxyHost); err != nil {
		// Installed but unable to run here (no cgroups, a sandbox …): its
		// rows say why, and wharf's rows are still measured.
		d.stop()
		c.skip = "dockerd did not start: " + firstLine(err.Error())
		return c, nil
	}
	c.close = d.stop
	c.pull = d.pull
	return c, nil
}

// dockerdProc is the bench's own dockerd and the containerd it starts.
type dockerdProc struct {
	tmp, cli, host string
	cmd            *exec.Cmd
	done           chan struct{}
}

func (d *dockerdProc) logTail() string {
	b, _ := os.ReadFile(filepath.Join(d.tmp, "dockerd.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func (d *dockerdProc) start(ctx context.Context, bin, proxyHost string) error {
	logf, err := os.Create(filepath.Join(d.tmp, "dockerd.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	d.cmd = exec.Command(bin,
		"--data-root", filepath.Join(d.tmp, "root"),
		"--exec-root", filepath.Join(d.tmp, "exec"),
		"--pidfile", filepath.Join(d.tmp, "pid"),
		"-H", d.host,
		"--storage-driver", "vfs",
		"--iptables=false", "--ip6tables=false", "--bridge=none",
		"--insecure-registry", proxyHost)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.Env = append(os.Environ(), "HOME="+d.tmp)
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		return fmt.Errorf("start dockerd: %w", err)
	}
	d.done = make(chan struct{})
	go func() { d.cmd.Wait(); close(d.done) }()
	// Ready when the CLI gets the daemon's version through the socket.
	deadline := time.Now().Add(60 * time.Second)
	for {
		vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := d.docker(vctx, "version", "--format", "{{.Server.Version}}")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-d.done:
			tail := d.logTail()
			return fmt.Errorf("dockerd exited: %s\n%s", lastLine(tail), tail)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dockerd did not answer `docker version` in 60s: %s\n%s", firstLine(err.Error()), d.logTail())
		}
	}
}

// docker runs the CLI against the bench's dockerd; a failure's error is its stderr.
func (d *dockerdProc) docker(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, d.cli, append([]string{"-H", d.host}, args...)...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+filepath.Join(d.tmp, "cli"), "DOCKER_HOST=")
	return runStderr(cmd)
}

func (d *dockerdProc) pull(ctx context.Context, ref string) error {
	return d.docker(ctx, "pull", "--quiet", ref)
}

// stop ends dockerd (SIGTERM, SIGKILL after 30 s), then the containerd it
// started under its exec-root if that outlived it, and removes the temp dirs.
func (d *dockerdProc) stop() {
	pidFile := filepath.Join(d.tmp, "exec", "containerd", "containerd.pid")
	containerd := 0
	if b, err := os.ReadFile(pidFile); err == nil {
		containerd, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if d.cmd != nil && d.cmd.Process != nil {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(30 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	}
	if containerd > 0 && processIs(containerd, "containerd") {
		_ = syscall.Kill(containerd, syscall.SIGTERM)
		for i := 0; i < 100 && processIs(containerd, "containerd"); i++ {
			time.Sleep(50 * time.Millisecond) // waiting for a process we cannot wait(2) for
		}
		if processIs(containerd, "containerd") {
			_ = syscall.Kill(containerd, syscall.SIGKILL)
		}
	}
	// vfs leaves read-only directories (the layers' own modes).
	_ = filepath.WalkDir(d.tmp, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(d.tmp)
}

// processIs reports whether pid is alive (not a zombie) and named name.
func processIs(pid int, name string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "PID (comm) S …"
	s := string(b)
	i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if i < 0 || j < i || len(s) < j+3 {
		return false
	}
	return s[i+1:j] == name && s[j+2] != 'Z'
}
