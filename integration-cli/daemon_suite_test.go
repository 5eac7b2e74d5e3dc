package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/check.v1"
)

// DaemonSuite checks wharfd's lifecycle: one daemon per test, since each test
// starts, breaks or stops it.
type DaemonSuite struct{}

func TestDaemonSuite(t *testing.T) { t.Parallel(); runSuite(t, &DaemonSuite{}) }

func (s *DaemonSuite) TestSecondDaemonOnSameDataRootIsRefused(c *check.C) {
	d1 := StartDaemon(c)
	defer d1.Stop(c)
	d2 := NewDaemon(c)
	d2.Root = d1.Root
	err := d2.StartWithError()
	defer d2.Kill()
	c.Assert(err, check.NotNil, check.Commentf("a second wharfd on %s started", d1.Root))
	exitErr, exited := d2.Exited(5 * time.Second)
	c.Assert(exited, check.Equals, true)
	c.Assert(isExitError(exitErr), check.Equals, true, check.Commentf("second wharfd should exit non-zero, got %v", exitErr))
	log := d2.Log()
	c.Assert(containsAny(strings.ToLower(log), "in use", "locked", "another", "already running", "lock"), check.Equals, true,
		check.Commentf("the error should say the data-root is in use:\n%s", log))
	c.Assert(strings.Contains(log, d1.Root), check.Equals, true, check.Commentf("the error should name the data-root %s:\n%s", d1.Root, log))
	// The first daemon is unharmed.
	c.Assert(d1.Get(c, "/_ping").Status, check.Equals, 200)
}

// startRefused starts wharfd with body as its daemon.json and checks that
// it refuses: the start fails and the process exits non-zero. It returns
// the daemon, for its log.
func startRefused(c *check.C, body, why string) *Daemon {
	d := NewDaemon(c)
	cfg := filepath.Join(c.MkDir(), "daemon.json")
	c.Assert(os.WriteFile(cfg, []byte(body), 0o644), check.IsNil)
	err := d.StartWithError("--config-file", cfg)
	defer d.Kill()
	c.Assert(err, check.NotNil, check.Commentf("wharfd started with %s", why))
	exitErr, exited := d.Exited(5 * time.Second)
	c.Assert(exited, check.Equals, true)
	c.Assert(isExitError(exitErr), check.Equals, true, check.Commentf("want non-zero exit, got %v", exitErr))
	return d
}

func (s *DaemonSuite) TestUnknownKeyInDaemonJSONStopsStartup(c *check.C) {
	d := startRefused(c, `{"debug": true, "no-such-option-xyz": 1}`, "an unknown daemon.json key")
	c.Assert(strings.Contains(d.Log(), "no-such-option-xyz"), check.Equals, true,
		check.Commentf("the error should name the unknown key:\n%s", d.Log()))
}

// A key given twice must not be settled silently by whichever comes last
// (issue 11 #10): both orders are refused and the error names the key.
func (s *DaemonSuite) TestDuplicateKeyInDaemonJSONStopsStartup(c *check.C) {
	for _, body := range []string{
		"{\n  \"max-concurrent-downloads\": -5,\n  \"max-concurrent-downloads\": 2\n}",
		"{\n  \"max-concurrent-downloads\": 2,\n  \"max-concurrent-downloads\": -5\n}",
	} {
		d := NewDaemon(c)
		cfg := filepath.Join(c.MkDir(), "daemon.json")
		c.Assert(os.WriteFile(cfg, []byte(body), 0o644), check.IsNil)
		err := d.StartWithError("--config-file", cfg)
		d.Kill()
		c.Assert(err, check.NotNil, check.Commentf("wharfd started with a duplicated key:\n%s", body))
		c.Assert(d.Log(), check.Matches, `(?s).*duplicate key "max-concurrent-downloads".*line 2.*line 3.*`,
			check.Commentf("the error should name the key and both lines:\n%s", d.Log()))
	}
}

// A daemon.json with a stray closing brace after the object (an editing
// slip) stops the start with an error that says where, as dockerd's does;
// it was read as the object before it.
func (s *DaemonSuite) TestTrailingDataInDaemonJSONStopsStartup(c *check.C) {
	d := startRefused(c, "{\n  \"max-concurrent-downloads\": 2\n}\n}\n", "data after daemon.json's object")
	c.Assert(d.Log(), check.Matches, `(?s).*invalid JSON: data after the end of the object at byte 36.*`, check.Commentf("%s", d.Log()))
}

func (s *DaemonSuite) TestValidDaemonJSONIsAccepted(c *check.C) {
	d := NewDaemon(c)
	cfg := filepath.Join(c.MkDir(), "daemon.json")
	c.Assert(os.WriteFile(cfg, []byte(`{"registry-mirrors": ["http://127.0.0.1:1"], "insecure-registries": ["127.0.0.1:1"]}`), 0o644), check.IsNil)
	d.Start(c, "--config-file", cfg)
	defer d.Stop(c)
	var info struct {
		RegistryConfig struct {
			Mirrors []string
		}
	}
	d.Get(c, "/v1.50/info").JSON(c, &info)
	c.Assert(strings.Join(info.RegistryConfig.Mirrors, ","), check.Matches, `.*127\.0\.0\.1:1.*`)
}

func (s *DaemonSuite) TestSIGTERMExitsCleanlyAndReleasesTheDataRoot(c *check.C) {
	d := StartDaemon(c)
	d.Import(c, "sigterm/test:1")
	d.Stop(c) // asserts exit status 0
	_, err := os.Stat(d.Sock)
	c.Assert(os.IsNotExist(err), check.Equals, true, check.Commentf("socket %s left behind after SIGTERM", d.Sock))
	// The lock is released and the store survives.
	d.Start(c)
	defer d.Stop(c)
	c.Assert(d.Get(c, "/v1.50/images/sigterm/test:1/json").Status, check.Equals, 200)
}

func (s *DaemonSuite) TestSocketModeIs0660(c *check.C) {
	d := StartDaemon(c)
	defer d.Stop(c)
	fi, err := os.Stat(d.Sock)
	c.Assert(err, check.IsNil)
	c.Assert(fi.Mode()&os.ModeSocket != 0, check.Equals, true)
	c.Assert(fi.Mode().Perm(), check.Equals, os.FileMode(0o660))
}
