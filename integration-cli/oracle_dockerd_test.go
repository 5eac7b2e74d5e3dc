package integration

import (
	"context"
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

// dockerd is a private Docker Engine (Debian's docker.io, dockerd 20.10)
// used as the oracle of an image's filesystem: no one here wrote it. It
// runs on the vfs driver (plain directory copies, no kernel overlay
// needed), with no bridge and no iptables, because the oracle never runs a
// container: `docker create` then `docker export` read the rootfs the
// engine assembled from the layers.
type dockerd struct {
	dir  string // data-root, exec-root, pidfile, socket and CLI config
	sock string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// dockerdReadyTimeout bounds the engine's start: it starts its own
// containerd and loads no containers, a few seconds on this machine; a
// minute leaves room for a loaded CI host.
const dockerdReadyTimeout = 60 * time.Second

// startDockerd starts the oracle engine, trusting insecureRegistry (the
// test registry's host:port) over plain HTTP. Without dockerd or the
// docker CLI the caller is skipped loudly, or failed under CI=true
// (requireClient): .ci/run installs docker.io.
func startDockerd(c *check.C, insecureRegistry string) *dockerd {
	bin := requireClient(c, "dockerd", "docker.io (apt), the oracle engine")
	dockerPath(c)
	// A short directory of its own: the socket's path must fit the 108
	// bytes of sun_path, which check's MkDir paths can exceed.
	dir, err := os.MkdirTemp("", "wharf-dd-")
	c.Assert(err, check.IsNil)
	// An empty config file, so that a host's /etc/docker/daemon.json
	// cannot change the oracle.
	c.Assert(os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}"), 0o644), check.IsNil)
	o := &dockerd{dir: dir, sock: filepath.Join(dir, "docker.sock"), done: make(chan struct{})}
	logf, err := os.Create(filepath.Join(dir, "dockerd.log"))
	c.Assert(err, check.IsNil)
	defer logf.Close()
	o.cmd = exec.Command(bin,
		"--config-file", filepath.Join(dir, "daemon.json"),
		"--storage-driver", "vfs",
		"--data-root", filepath.Join(dir, "root"),
		"--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "pid"),
		"-H", "unix://"+o.sock,
		"--bridge", "none", "--iptables=false", "--ip-masq=false",
		"--insecure-registry", insecureRegistry,
	)
	o.cmd.Stdout, o.cmd.Stderr = logf, logf
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	c.Assert(o.cmd.Start(), check.IsNil)
	go func() { o.err = o.cmd.Wait(); close(o.done) }()
	if err := o.waitReady(); err != nil {
		o.stop()
		c.Fatalf("the oracle dockerd did not start: %v\n%s", err, o.logTail())
	}
	return o
}

// waitReady polls GET /_ping on the socket until it answers 200 or the
// engine exits.
func (o *dockerd) waitReady() error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", o.sock)
		},
	}}
	exited, err := waitPing(client, "http://dockerd/_ping", o.done, dockerdReadyTimeout, 50*time.Millisecond)
	switch {
	case exited:
		return fmt.Errorf("dockerd exited: %v", o.err)
	case err != nil:
		return fmt.Errorf("no answer on %s within %s (last: %v)", o.sock, dockerdReadyTimeout, err)
	}
	return nil
}

func (o *dockerd) logTail() string {
	b, _ := os.ReadFile(filepath.Join(o.dir, "dockerd.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// stop ends the engine (SIGTERM, which also stops its containerd; SIGKILL
// after 30 s) and removes its directory.
func (o *dockerd) stop() {
	if o.cmd.Process != nil {
		_ = o.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-o.done:
		case <-time.After(30 * time.Second):
			_ = o.cmd.Process.Kill()
			<-o.done
		}
	}
	os.RemoveAll(o.dir)
}

// docker runs the docker CLI against the oracle engine.
func (o *dockerd) docker(c *check.C, args ...string) Result { return o.dockerIn(c, nil, args...) }

// dockerIn is docker with stdin.
func (o *dockerd) dockerIn(c *check.C, stdin []byte, args ...string) Result {
	env := []string{"DOCKER_HOST=unix://" + o.sock, "DOCKER_CONFIG=" + filepath.Join(o.dir, ".docker"), "DOCKER_CLI_HINTS=false"}
	r := runCmd(c, stdin, env, dockerPath(c), args...)
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s\n--- dockerd log (tail) ---\n%s", r.String()[:min(len(r.String()), 4000)], o.logTail()))
	return r
}

// export is the oracle's answer for ref: the tar of the rootfs of a
// container created from it (`docker create`, nothing is run, then
// `docker export`). The container and image are removed afterwards so
// that one case cannot leak into the next.
func (o *dockerd) export(c *check.C, ref string) []byte {
	o.docker(c, "pull", "-q", ref)
	id := o.docker(c, "create", "--network", "none", ref, "/bin/true").Stdout
	id = strings.TrimSpace(id)
	out := o.docker(c, "export", id)
	o.docker(c, "rm", id)
	o.docker(c, "rmi", ref)
	return []byte(out.Stdout)
}
