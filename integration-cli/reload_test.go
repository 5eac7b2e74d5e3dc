package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// ReloadSuite: SIGHUP reloads the configuration as dockerd's does, and
// never ends the daemon.
type ReloadSuite struct{}

func TestReloadSuite(t *testing.T) { t.Parallel(); runSuite(t, &ReloadSuite{}) }

// reloadLogWait bounds the wait for a reload's log line: the reload reads
// a few small files; 20 s leaves room for a loaded CI machine.
const reloadLogWait = 20 * time.Second

// hup sends SIGHUP to d and waits until its log has one more line
// containing want than before.
func hup(c *check.C, d *Daemon, want string) {
	before := strings.Count(d.Log(), want)
	c.Assert(d.cmd.Process.Signal(syscall.SIGHUP), check.IsNil)
	exited := func() bool {
		select {
		case <-d.done:
			return true
		default:
			return false
		}
	}
	ok := waitFor(reloadLogWait, func() bool {
		return exited() || strings.Count(d.Log(), want) > before
	})
	if exited() {
		c.Fatalf("wharfd exited on SIGHUP (%v)\n--- wharfd log ---\n%s", d.waitErr, logTail(d))
	}
	c.Assert(ok, check.Equals, true, check.Commentf("no %q in the log within %s of SIGHUP\n%s", want, reloadLogWait, logTail(d)))
}

// writeHostsToml writes <certsDir>/<dir>/hosts.toml.
func writeHostsToml(c *check.C, certsDir, dir, body string) {
	p := filepath.Join(certsDir, dir)
	c.Assert(os.MkdirAll(p, 0o700), check.IsNil)
	c.Assert(os.WriteFile(filepath.Join(p, "hosts.toml"), []byte(body), 0o600), check.IsNil)
}

// remoteServedBy is a remote inspect of name through d, and the host that
// served it.
func remoteServedBy(c *check.C, d *Daemon, name string) string {
	r := d.Get(c, "/v1.50/images/"+name+"/json?remote=1")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("remote inspect %s: %s\n%s", name, r, logTail(d)))
	var m struct{ Registry, ServedBy string }
	r.JSON(c, &m)
	return m.ServedBy
}

// TestSIGHUPReloadsMirrorsAndNeverExits: before, SIGHUP killed wharfd at
// once without a word. Now it re-reads the certs dirs: a hosts.toml
// written after start sends the next inspect through its mirror; a broken
// one is logged and the running configuration kept.
func (s *ReloadSuite) TestSIGHUPReloadsMirrorsAndNeverExits(c *check.C) {
	up, err := testregistry.Start(testregistry.Options{})
	c.Assert(err, check.IsNil)
	defer up.Close()
	mirror, err := testregistry.Start(testregistry.Options{ProxyRemoteURL: up.DirectURL})
	c.Assert(err, check.IsNil)
	defer mirror.Close()
	pushImage(c, up, "reload/img", "1", testregistry.ImageOptions{})
	name := up.Host + "/reload/img:1"

	d := NewDaemon(c)
	certs := filepath.Join(d.Home, "certs.d")
	d.Start(c, "--certs-dir", certs)
	defer d.Kill()

	// Nothing configured: SIGHUP is a reload that changes nothing.
	hup(c, d, "configuration reloaded")
	c.Assert(remoteServedBy(c, d, name), check.Equals, up.Host)

	// A mirror for the registry, in containerd's directory form (host_port_).
	hostPart, port, _ := strings.Cut(up.Host, ":")
	writeHostsToml(c, certs, hostPart+"_"+port+"_", fmt.Sprintf(`
server = "http://%s"

[host."http://%s"]
  capabilities = ["pull", "resolve"]
`, up.Host, mirror.Host))
	hup(c, d, "configuration reloaded")
	c.Assert(strings.Contains(d.Log(), mirror.Host), check.Equals, true, check.Commentf("the reload's log line names the new mirror\n%s", logTail(d)))
	mirror.Counter.Reset()
	c.Assert(remoteServedBy(c, d, name), check.Equals, mirror.Host)
	c.Assert(mirror.Counter.Total() > 0, check.Equals, true)

	// A broken hosts.toml: logged, the running configuration kept.
	writeHostsToml(c, certs, hostPart+"_"+port+"_", "[host.\"http://x\"\ncapabilities = 1")
	hup(c, d, "reload failed")
	c.Assert(remoteServedBy(c, d, name), check.Equals, mirror.Host)
	d.Stop(c)
}

// TestSIGHUPDuringALoadDoesNotAbortIt: a SIGHUP that arrives while an
// archive is being loaded is a reload; the load finishes and records the
// image. Before, it killed wharfd mid-load, leaving the socket, an ingest
// file and the lock behind.
func (s *ReloadSuite) TestSIGHUPDuringALoadDoesNotAbortIt(c *check.C) {
	src := StartDaemon(c)
	id := src.Import(c, "reload/load:1", "LABEL n=1")
	saved := src.Get(c, "/v1.50/images/get?names=reload/load:1")
	c.Assert(saved.Status, check.Equals, http.StatusOK, check.Commentf("%s", saved))
	src.Stop(c)

	d := StartDaemon(c)
	defer d.Kill()
	pr, pw := io.Pipe()
	type result struct {
		status int
		body   []byte
		err    error
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://wharfd/v1.50/images/load?quiet=1", pr)
		req.Header.Set("Content-Type", "application/x-tar")
		resp, err := d.HTTPClient().Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- result{resp.StatusCode, b, err}
	}()
	half := len(saved.Body) / 2
	_, err := pw.Write(saved.Body[:half]) // taken by wharfd: the load is under way
	c.Assert(err, check.IsNil)
	hup(c, d, "configuration reloaded")
	_, err = pw.Write(saved.Body[half:])
	c.Assert(err, check.IsNil)
	c.Assert(pw.Close(), check.IsNil)
	r := <-done
	c.Assert(r.err, check.IsNil)
	lr := Response{Status: r.status, Body: r.body}
	c.Assert(lr.Status, check.Equals, http.StatusOK, check.Commentf("%s", lr))
	c.Assert(lr.Lines(c).Err(), check.Equals, "")
	c.Assert(d.Inspect(c, "reload/load:1")["Id"], check.Equals, id)
	d.Stop(c)
}

// TestSIGHUPRefusesAHostsTomlHeaderWithCRLF (issue 20, red team finding
// 6): a hosts.toml whose header value holds CR/LF was taken by a reload
// that logged "nothing changed", and every request to that mirror then
// failed (Go's transport refuses the header) and fell back to the
// upstream. Now the file is refused when it is read: the reload logs an
// error naming it, and requests keep the previous configuration — the
// mirror and its valid header.
func (s *ReloadSuite) TestSIGHUPRefusesAHostsTomlHeaderWithCRLF(c *check.C) {
	up, err := testregistry.Start(testregistry.Options{})
	c.Assert(err, check.IsNil)
	defer up.Close()
	mirror, err := testregistry.Start(testregistry.Options{ProxyRemoteURL: up.DirectURL})
	c.Assert(err, check.IsNil)
	defer mirror.Close()
	pushImage(c, up, "reload/hdr", "1", testregistry.ImageOptions{})
	name := up.Host + "/reload/hdr:1"

	d := NewDaemon(c)
	certs := filepath.Join(d.Home, "certs.d")
	hostPart, port, _ := strings.Cut(up.Host, ":")
	dir := hostPart + "_" + port + "_"
	hostsToml := func(header string) string {
		return fmt.Sprintf(`
server = "http://%s"

[host."http://%s"]
  capabilities = ["pull", "resolve"]
  [host."http://%s".header]
    x-wharf-mirror = %s
`, up.Host, mirror.Host, mirror.Host, header)
	}
	writeHostsToml(c, certs, dir, hostsToml(`"one"`))
	d.Start(c, "--certs-dir", certs)
	defer d.Kill()

	servedWithHeader := func(when string) {
		mirror.Counter.Reset()
		c.Assert(remoteServedBy(c, d, name), check.Equals, mirror.Host, check.Commentf("%s\n%s", when, logTail(d)))
		vals := mirror.Counter.HeaderValues("X-Wharf-Mirror")
		c.Assert(vals, check.Not(check.HasLen), 0, check.Commentf("%s: no request reached the mirror", when))
		for _, v := range vals {
			c.Check(v, check.Equals, "one", check.Commentf("%s: %v", when, vals))
		}
		for _, v := range mirror.Counter.HeaderValues("X-Injected") {
			c.Check(v, check.Equals, "", check.Commentf("%s: a header was injected", when))
		}
	}
	servedWithHeader("before the reload")

	// A value with CR/LF (TOML's escapes), then a name that is no token:
	// each reload fails naming the file, and the mirror keeps its header.
	file := filepath.Join(certs, dir, "hosts.toml")
	for _, bad := range []string{hostsToml(`"one\r\nX-Injected: yes"`), strings.Replace(hostsToml(`"one"`), "x-wharf-mirror", `"x wharf"`, 1)} {
		writeHostsToml(c, certs, dir, bad)
		named := strings.Count(d.Log(), file)
		hup(c, d, "reload failed")
		c.Assert(strings.Count(d.Log(), file) > named, check.Equals, true, check.Commentf("the reload's error names %s\n%s", file, logTail(d)))
		servedWithHeader("after a refused reload")
	}
	d.Stop(c)
}
