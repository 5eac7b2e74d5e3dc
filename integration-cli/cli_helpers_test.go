package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/check.v1"
)

// Result is a finished CLI run.
type Result struct {
	Cmd      string
	Stdout   string
	Stderr   string
	ExitCode int
}

func (r Result) String() string {
	return fmt.Sprintf("$ %s\nexit %d\n--- stdout ---\n%s\n--- stderr ---\n%s", r.Cmd, r.ExitCode, r.Stdout, r.Stderr)
}

// cliTimeout bounds one CLI run: every command here finishes in seconds.
const cliTimeout = 90 * time.Second

func runCmd(c *check.C, stdin []byte, env []string, bin string, args ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := Result{Cmd: filepath.Base(bin) + " " + strings.Join(args, " "), Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	default:
		c.Fatalf("%s: %v", res.Cmd, err)
	}
	if ctx.Err() != nil {
		c.Fatalf("%s: timed out after %s\n%s", res.Cmd, cliTimeout, res)
	}
	return res
}

// cliEnv isolates credential stores and configs in the daemon's Home.
func (d *Daemon) cliEnv() []string {
	return []string{
		"HOME=" + d.Home,
		"DOCKER_CONFIG=" + filepath.Join(d.Home, ".docker"),
		"XDG_CONFIG_HOME=" + filepath.Join(d.Home, ".config"),
		"WHARF_HOST=" + d.Host,
		"DOCKER_HOST=" + d.Host,
		"DOCKER_CLI_HINTS=false",
	}
}

// Wharf runs the wharf CLI against d.
func (d *Daemon) Wharf(c *check.C, args ...string) Result {
	return runCmd(c, nil, d.cliEnv(), bins.Wharf, append([]string{"-H", d.Host}, args...)...)
}

// WharfIn runs the wharf CLI with stdin.
func (d *Daemon) WharfIn(c *check.C, stdin []byte, args ...string) Result {
	return runCmd(c, stdin, d.cliEnv(), bins.Wharf, append([]string{"-H", d.Host}, args...)...)
}

// WharfOK runs wharf and requires exit 0.
func (d *Daemon) WharfOK(c *check.C, args ...string) Result {
	r := d.Wharf(c, args...)
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	return r
}

// dockerPath finds the docker CLI: it must be there in CI, and is skipped
// loudly elsewhere.
func dockerPath(c *check.C) string {
	return requireClient(c, "docker", "docker-ce-cli (or docker.io)")
}

// requireClient finds a client program written by others that the suites
// drive (docker, skopeo, python3). Under CI=true it must be there (.ci/run
// installs it), so a missing one fails the suite instead of hiding a
// regression; elsewhere its tests are skipped loudly.
func requireClient(c *check.C, name, install string) string {
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		c.Fatalf("%s not found on PATH and CI=true: install %s in .ci/run", name, install)
	}
	msg := fmt.Sprintf("SKIPPING %s tests: no `%s` on PATH (they are required when CI=true)", name, name)
	fmt.Fprintln(os.Stderr, "integration-cli: "+msg)
	c.Skip(msg)
	return ""
}

// Docker runs the docker CLI against d.
func (d *Daemon) Docker(c *check.C, args ...string) Result {
	return runCmd(c, nil, d.cliEnv(), dockerPath(c), args...)
}

// DockerIn runs the docker CLI with stdin.
func (d *Daemon) DockerIn(c *check.C, stdin []byte, args ...string) Result {
	return runCmd(c, stdin, d.cliEnv(), dockerPath(c), args...)
}

// DockerOK runs docker and requires exit 0.
func (d *Daemon) DockerOK(c *check.C, args ...string) Result {
	r := d.Docker(c, args...)
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	return r
}
