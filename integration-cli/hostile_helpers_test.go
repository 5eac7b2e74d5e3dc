package integration

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gopkg.in/check.v1"
)

// startDaemonEnv is StartDaemon with extra environment variables (e.g. the
// registry timeouts, shortened so hostile cases stay fast).
func startDaemonEnv(c *check.C, env []string, args ...string) *Daemon {
	d := NewDaemon(c)
	d.Args = args
	full := append([]string{"-H", d.Host, "--data-root", d.Root, "-D"}, args...)
	logf, err := os.OpenFile(d.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	c.Assert(err, check.IsNil)
	defer logf.Close()
	cmd := exec.Command(bins.Wharfd, full...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(append(os.Environ(), "HOME="+d.Home, "XDG_CONFIG_HOME="+filepath.Join(d.Home, ".config")), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	c.Assert(cmd.Start(), check.IsNil)
	d.cmd, d.done = cmd, make(chan struct{})
	go func(done chan struct{}) { d.waitErr = cmd.Wait(); close(done) }(d.done)
	if err := d.waitReady(); err != nil {
		c.Fatalf("wharfd did not start: %v\n%s", err, d.Log())
	}
	return d
}

// pid is wharfd's process id.
func (d *Daemon) pid() int { return d.cmd.Process.Pid }

// procStatus reads a "Key:   N kB" line of /proc/PID/status, in KiB (or the
// plain number for counts).
func procStatus(c *check.C, pid int, key string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	c.Assert(err, check.IsNil)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		fields := strings.Fields(v)
		n, err := strconv.ParseInt(fields[0], 10, 64)
		c.Assert(err, check.IsNil)
		return n
	}
	c.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

// fdCount is the number of open file descriptors of pid.
func fdCount(c *check.C, pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	c.Assert(err, check.IsNil)
	return len(ents)
}

// storeState is what a failed pull must not change: the image list and the
// names in the blob directory.
type storeState struct {
	Images string
	Blobs  []string
	Ingest []string // temp files of downloads in flight; none may stay behind
}

func (d *Daemon) storeState(c *check.C) storeState {
	r := d.oneShot(c, http.MethodGet, "/v1.50/images/json?all=1")
	c.Assert(r.Status, check.Equals, http.StatusOK)
	return storeState{Images: string(r.Body), Blobs: dirNames(c, filepath.Join(d.Root, "blobs", "sha256")), Ingest: dirNames(c, filepath.Join(d.Root, "ingest"))}
}

func dirNames(c *check.C, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		c.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// remoteInspect is GET /images/REF/json?remote=1 with an optional X-Registry-Auth.
func (d *Daemon) remoteInspect(c *check.C, ref, authHdr string) Response {
	var hdr []string
	if authHdr != "" {
		hdr = []string{"X-Registry-Auth", authHdr}
	}
	return d.oneShot(c, http.MethodGet, "/v1.50/images/"+ref+"/json?remote=1", hdr...)
}

// pullMessage pulls image:tag and returns the error the client sees ("" on
// success): the status message, or the errorDetail of the stream.
func (d *Daemon) pullMessage(c *check.C, image, tag, authHdr string) string {
	q := url.Values{"fromImage": {image}}
	if tag != "" {
		q.Set("tag", tag)
	}
	var hdr []string
	if authHdr != "" {
		hdr = []string{"X-Registry-Auth", authHdr}
	}
	r := d.oneShot(c, http.MethodPost, "/v1.50/images/create?"+q.Encode(), hdr...)
	if r.Status != http.StatusOK {
		if m := r.Message(); m != "" {
			return m
		}
		return r.String()
	}
	return r.Lines(c).Err()
}

// ping checks wharfd still answers.
func (d *Daemon) ping(c *check.C) {
	r := d.oneShot(c, http.MethodGet, "/_ping")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("wharfd stopped serving\n%s", logTail(d)))
}

// infoGoroutines is NGoroutines from /info.
func (d *Daemon) infoGoroutines(c *check.C) int {
	r := d.oneShot(c, http.MethodGet, "/v1.50/info")
	c.Assert(r.Status, check.Equals, http.StatusOK)
	var info struct{ NGoroutines int }
	r.JSON(c, &info)
	return info.NGoroutines
}

// pathEscape keeps a ref readable in a URL path.
func pathEscape(ref string) string { return strings.ReplaceAll(url.PathEscape(ref), "%2F", "/") }

// oneShot is Req without keep-alive: the harness's Req leaves an idle
// connection (and so a goroutine and a descriptor in wharfd) per call,
// which would hide a leak in the counts the hostile and load suites take.
func (d *Daemon) oneShot(c *check.C, method, path string, hdr ...string) Response {
	req, err := http.NewRequest(method, "http://wharfd"+path, nil)
	c.Assert(err, check.IsNil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	cl := d.HTTPClient()
	cl.Transport.(*http.Transport).DisableKeepAlives = true
	resp, err := cl.Do(req)
	c.Assert(err, check.IsNil, check.Commentf("%s %s", method, path))
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	c.Assert(err, check.IsNil)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// leakBaseline is wharfd's goroutine and descriptor count at rest.
type leakBaseline struct{ goroutines, fds int }

func (d *Daemon) leakBaseline(c *check.C) leakBaseline {
	return leakBaseline{d.infoGoroutines(c), fdCount(c, d.pid())}
}

// checkBackToBaseline polls (bounded) until wharfd's goroutines and
// descriptors are back to b, with a little slack for the runtime's own.
func (d *Daemon) checkBackToBaseline(c *check.C, b leakBaseline) {
	var now leakBaseline
	back := waitFor(30*time.Second, func() bool {
		now = d.leakBaseline(c)
		return now.goroutines <= b.goroutines+5 && now.fds <= b.fds+3
	})
	c.Check(back, check.Equals, true, check.Commentf("goroutines %d (baseline %d), fds %d (baseline %d)", now.goroutines, b.goroutines, now.fds, b.fds))
	c.Logf("baseline goroutines %d fds %d; now %d %d", b.goroutines, b.fds, now.goroutines, now.fds)
}
