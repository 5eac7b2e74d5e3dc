package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"gopkg.in/check.v1"
)

// eventStream is a running `docker events`: its stdout lines as they come.
type eventStream struct {
	cmd   *exec.Cmd
	lines chan string
}

// DockerStream starts the docker CLI against d and streams its stdout.
func (d *Daemon) DockerStream(c *check.C, args ...string) *eventStream {
	cmd := exec.Command(dockerPath(c), args...)
	cmd.Env = append(os.Environ(), d.cliEnv()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	c.Assert(err, check.IsNil)
	c.Assert(cmd.Start(), check.IsNil)
	s := &eventStream{cmd: cmd, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	return s
}

// next is the next line; ok is false when the stream ended. The timeout
// only bounds a broken run.
func (s *eventStream) next(c *check.C) (line string, ok bool) {
	select {
	case l, ok := <-s.lines:
		return l, ok
	case <-time.After(30 * time.Second):
		c.Fatalf("no event line within 30s from %v", s.cmd.Args)
		return "", false
	}
}

func (s *eventStream) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// waitListeners waits until wharfd counts n /events subscribers, so that an
// event made afterwards is a live one for them.
func (d *Daemon) waitListeners(c *check.C, n int) {
	ok := waitFor(20*time.Second, func() bool {
		var info struct{ NEventsListener int }
		d.Get(c, "/v1.50/info").JSON(c, &info)
		return info.NEventsListener == n
	})
	c.Assert(ok, check.Equals, true, check.Commentf("wharfd never counted %d events listener(s)", n))
}

// Times past 2262 (or before 1677) do not fit int64 nanoseconds; wharfd
// clamps them instead of letting them wrap (issue 11 #9): --since 2300 replays
// no past event, --until 2300 replays them all and keeps the stream open.
func (s *DockerCLISuite) TestDockerEventsBeyondYear2262(c *check.C) {
	d := StartDaemon(c) // its own event log, so the lines are predictable
	defer d.Stop(c)
	before := time.Now().Add(-time.Minute).Unix()
	d.Import(c, "dcli/far:1")
	format := []string{"--filter", "type=image", "--format", "{{.Action}} {{.Actor.Attributes.name}}"}

	// --since 2300: the first line is the live tag, not the past import.
	since := d.DockerStream(c, append([]string{"events", "--since", "2300-01-01"}, format...)...)
	defer since.stop()
	d.waitListeners(c, 1)
	d.DockerOK(c, "tag", "dcli/far:1", "dcli/far:live1")
	line, ok := since.next(c)
	c.Assert(ok, check.Equals, true)
	c.Assert(line, check.Equals, "tag dcli/far:live1")
	since.stop()
	d.waitListeners(c, 0)

	// --until 2300: the past events, then live ones, and the stream stays
	// open after the first live event.
	until := d.DockerStream(c, append([]string{"events", "--since", fmt.Sprint(before), "--until", "2300-01-01"}, format...)...)
	defer until.stop()
	// The past: the import (with its tag) and live1, in the order they
	// happened; the replay ends with live1.
	var past []string
	for len(past) == 0 || past[len(past)-1] != "tag dcli/far:live1" {
		line, ok := until.next(c)
		c.Assert(ok, check.Equals, true, check.Commentf("stream ended after %q", past))
		past = append(past, line)
	}
	c.Assert(strings.Join(past, "\n"), check.Matches, `(?s)(.*\n)?import sha256:.*`, check.Commentf("no past import in %q", past))
	d.waitListeners(c, 1)
	for _, tag := range []string{"live2", "live3"} {
		d.DockerOK(c, "tag", "dcli/far:1", "dcli/far:"+tag)
		line, ok := until.next(c)
		c.Assert(ok, check.Equals, true, check.Commentf("stream ended before the %s event", tag))
		c.Assert(line, check.Equals, "tag dcli/far:"+tag)
	}

	// The order of since and until is still checked on the real dates.
	bad := d.Docker(c, "events", "--since", "2300-01-02", "--until", "2300-01-01")
	c.Assert(bad.ExitCode, check.Not(check.Equals), 0)
	c.Assert(bad.Stderr, check.Matches, "(?s).*`since` time .* cannot be after `until` time.*")
	c.Assert(strings.Contains(bad.Stderr, "panic"), check.Equals, false)
}
