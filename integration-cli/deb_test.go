package integration

// Installing wharf like a daemon (issue 23): `make install`/`make uninstall`
// under a DESTDIR, and `make deb` installed with dpkg, checked and removed.
//
// DebPackageSuite changes the machine it runs on for a few seconds (dpkg -i,
// then dpkg -r and -P), so it runs only as root with dpkg present, and is
// required there under CI=true. It disturbs nothing running: the package
// enables and starts nothing, which the suite checks, and the wharf group
// that postinst adds (and that purge keeps, as Debian practice is for system
// groups) is deleted again when the suite added it.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

type DebMakeInstallSuite struct{ root string }

type DebPackageSuite struct{ root string }

func TestDebMakeInstallSuite(t *testing.T) { t.Parallel(); runSuite(t, &DebMakeInstallSuite{}) }

// Not in parallel: make deb stages the package in the checkout's bin/
// (contrib/packaging/nfpm.yaml reads bin/deb-root), where the other suites
// run bin/wharfd and bin/wharf, and rebuilds those when the tree changed
// since they were built.
func TestDebPackageSuite(t *testing.T) { runSuite(t, &DebPackageSuite{}) }

// makeEnv is the environment for a nested make: none of the outer `make
// test`'s MAKEFLAGS (jobserver descriptors, -n, -k).
func makeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// makeInCheckout is held while a suite runs make in the checkout: two at
// once would build the same tools into .cache/bin and write the same man
// pages together.
var makeInCheckout sync.Mutex

// runMake runs make in the checkout, one at a time.
func runMake(c *check.C, root string, args ...string) string {
	makeInCheckout.Lock()
	defer makeInCheckout.Unlock()
	return runIn(c, root, "make", append([]string{"--no-print-directory"}, args...)...)
}

func runIn(c *check.C, dir string, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = makeEnv()
	out, err := cmd.CombinedOutput()
	c.Assert(err, check.IsNil, check.Commentf("%s %s:\n%s", name, strings.Join(args, " "), out))
	return string(out)
}

// filesUnder lists the regular files and symlinks under dir, relative to it.
func filesUnder(c *check.C, dir string) []string {
	var files []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, "/"+rel)
		}
		return nil
	})
	c.Assert(err, check.IsNil)
	sort.Strings(files)
	return files
}

// installedFiles are the files make install writes under PREFIX (units
// under unitDir), the man pages counted rather than named.
func installedFiles(prefix, unitDir string) []string {
	return []string{
		prefix + "/bin/wharf",
		prefix + "/bin/wharfd",
		prefix + "/share/bash-completion/completions/wharf",
		prefix + "/share/doc/wharf/daemon.json.example",
		prefix + "/share/fish/vendor_completions.d/wharf.fish",
		prefix + "/share/man/man1/wharf.1",
		prefix + "/share/man/man5/wharf-policy.json.5",
		prefix + "/share/man/man8/wharfd.8",
		prefix + "/share/zsh/site-functions/_wharf",
		unitDir + "/wharf.service",
		unitDir + "/wharf.socket",
	}
}

func (s *DebMakeInstallSuite) SetUpSuite(c *check.C) {
	root, err := testregistry.RepoRoot()
	c.Assert(err, check.IsNil)
	s.root = root
}

// make install DESTDIR=… PREFIX=…: everything lands under PREFIX, the
// service unit names PREFIX's wharfd, and make uninstall removes every file
// install wrote.
func (s *DebMakeInstallSuite) TestInstallUninstallDestdir(c *check.C) {
	// The binaries are built into a directory of the test's (BIN_DIR), not
	// the checkout's bin/ that the other suites run.
	binDir := c.MkDir()
	// A copy of the checkout's binaries, built by the same make with the
	// same flags: go build finds them up to date and links nothing (two
	// links of wharfd and wharf were a third of the suite's CPU).
	for _, b := range []string{"wharf", "wharfd"} {
		runIn(c, s.root, "cp", "-p", filepath.Join(s.root, "bin", b), filepath.Join(binDir, b))
	}
	for _, tc := range []struct{ prefix, unitDir string }{
		{"/opt/wharf", "/opt/wharf/lib/systemd/system"},
		{"/usr", "/lib/systemd/system"},
	} {
		dest := c.MkDir()
		runMake(c, s.root, "install", "BIN_DIR="+binDir, "DESTDIR="+dest, "PREFIX="+tc.prefix)
		files := filesUnder(c, dest)
		for _, want := range installedFiles(tc.prefix, tc.unitDir) {
			c.Check(containsString(files, want), check.Equals, true, check.Commentf("PREFIX=%s: %s not installed; got %v", tc.prefix, want, files))
		}
		mds, _ := filepath.Glob(filepath.Join(s.root, "man", "*.[1-9].md"))
		var pages int
		for _, f := range files {
			if strings.HasPrefix(f, tc.prefix+"/share/man/man") {
				pages++
			}
		}
		c.Check(pages, check.Equals, len(mds), check.Commentf("PREFIX=%s: one man page per man/*.md", tc.prefix))
		unit, err := os.ReadFile(filepath.Join(dest, tc.unitDir, "wharf.service"))
		c.Assert(err, check.IsNil)
		c.Check(strings.Contains(string(unit), "\nExecStart="+tc.prefix+"/bin/wharfd -H fd://\n"), check.Equals, true, check.Commentf("%s", unit))
		c.Check(strings.Contains(string(unit), "/usr/local/"), check.Equals, false, check.Commentf("PREFIX=%s:\n%s", tc.prefix, unit))

		runMake(c, s.root, "uninstall", "BIN_DIR="+binDir, "DESTDIR="+dest, "PREFIX="+tc.prefix)
		c.Check(filesUnder(c, dest), check.HasLen, 0)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *DebPackageSuite) SetUpSuite(c *check.C) {
	if os.Geteuid() != 0 {
		msg := "SKIPPING the Debian package test: it installs and removes a package, so it runs as root only"
		fmt.Fprintln(os.Stderr, "integration-cli: "+msg)
		c.Skip(msg)
	}
	for _, tool := range []string{"dpkg", "dpkg-query", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				c.Fatalf("%s not found and CI=true as root: the Debian package test must run", tool)
			}
			msg := fmt.Sprintf("SKIPPING the Debian package test: no %s on PATH (required as root when CI=true)", tool)
			fmt.Fprintln(os.Stderr, "integration-cli: "+msg)
			c.Skip(msg)
		}
	}
	root, err := testregistry.RepoRoot()
	c.Assert(err, check.IsNil)
	s.root = root
}

// dpkgStatus is the package's dpkg status, "" when dpkg knows nothing of it.
func dpkgStatus(pkg string) string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", pkg).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func groupExists(name string) bool {
	return exec.Command("getent", "group", name).Run() == nil
}

// gitVersion is what the Makefile stamps into the binaries (VERSION) and
// the commit time it turns into the package's version.
func gitVersion(root string) (describe, commitTime string) {
	describe = "dev"
	cmd := exec.Command("git", "describe", "--always", "--dirty")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		describe = strings.TrimSpace(string(out))
	}
	cmd = exec.Command("git", "log", "-1", "--format=%cI")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		commitTime = strings.TrimSpace(string(out))
	}
	return describe, commitTime
}

// wharfdRunning reports a process whose executable is path.
func wharfdRunning(path string) []string {
	var pids []string
	exes, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, exe := range exes {
		if t, err := os.Readlink(exe); err == nil && (t == path || t == path+" (deleted)") {
			pids = append(pids, filepath.Base(filepath.Dir(exe)))
		}
	}
	return pids
}

// enablementLinks are the symlinks systemctl enable would make for the
// package's units.
func enablementLinks() []string {
	var links []string
	for _, pat := range []string{"/etc/systemd/system/*/wharf.*", "/etc/systemd/system/wharf.*"} {
		m, _ := filepath.Glob(pat)
		links = append(links, m...)
	}
	return links
}

// make deb; dpkg -i; the files dpkg -L lists exist; wharfd --version and
// wharf version report the build's version; systemd-analyze verify accepts
// the units; nothing is enabled or started; dpkg -r and -P leave none of the
// listed files behind.
func (s *DebPackageSuite) TestDebInstallVersionRemove(c *check.C) {
	// Idempotent: a package left by an earlier, interrupted run goes first.
	if st := dpkgStatus("wharf"); st != "" && !strings.HasSuffix(st, "not-installed") {
		runIn(c, "/", "dpkg", "--purge", "wharf")
	}
	hadGroup := groupExists("wharf")
	linksBefore := enablementLinks()
	defer func() {
		if st := dpkgStatus("wharf"); st != "" && !strings.HasSuffix(st, "not-installed") {
			_ = exec.Command("dpkg", "--purge", "wharf").Run()
		}
		if !hadGroup && groupExists("wharf") {
			// postrm keeps the group (Debian practice); the test put it
			// there, so the test takes it away.
			if out, err := exec.Command("groupdel", "wharf").CombinedOutput(); err != nil {
				c.Errorf("groupdel wharf: %v\n%s", err, out)
			}
		}
	}()

	start := time.Now()
	runMake(c, s.root, "deb")
	c.Logf("make deb: %s", time.Since(start).Round(time.Millisecond))
	debs, _ := filepath.Glob(filepath.Join(s.root, "bin", "wharf_*.deb"))
	c.Assert(debs, check.HasLen, 1, check.Commentf("make deb leaves one bin/wharf_*.deb"))

	describe, commitTime := gitVersion(s.root)
	wantDebVersion := strings.TrimSpace(runIn(c, s.root, filepath.Join(s.root, "contrib", "packaging", "deb-version.sh"), describe, commitTime))

	runIn(c, "/", "dpkg", "-i", debs[0])
	c.Assert(dpkgStatus("wharf"), check.Equals, "install ok installed")
	ver, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "wharf").Output()
	c.Assert(err, check.IsNil)
	c.Check(string(ver), check.Equals, wantDebVersion)

	list := strings.Fields(runIn(c, "/", "dpkg", "-L", "wharf"))
	for _, want := range []string{
		"/usr/bin/wharfd", "/usr/bin/wharf",
		"/lib/systemd/system/wharf.service", "/lib/systemd/system/wharf.socket",
		"/usr/share/man/man1/wharf.1.gz", "/usr/share/man/man1/wharf-inspect.1.gz",
		"/usr/share/man/man5/wharf-policy.json.5.gz", "/usr/share/man/man8/wharfd.8.gz",
		"/usr/share/bash-completion/completions/wharf", "/usr/share/zsh/site-functions/_wharf",
		"/usr/share/fish/vendor_completions.d/wharf.fish",
		"/usr/share/doc/wharf/daemon.json.example",
	} {
		c.Check(containsString(list, want), check.Equals, true, check.Commentf("dpkg -L wharf lacks %s", want))
	}
	var files []string
	for _, p := range list {
		// Stat, not Lstat: with merged /usr, /lib is a symlink to a directory.
		fi, err := os.Stat(p)
		if !c.Check(err, check.IsNil, check.Commentf("dpkg -L lists %s", p)) {
			continue
		}
		if !fi.IsDir() {
			files = append(files, p)
		}
	}

	// Installed, nothing enabled, nothing started; the group is there.
	c.Check(enablementLinks(), check.DeepEquals, linksBefore)
	c.Check(wharfdRunning("/usr/bin/wharfd"), check.HasLen, 0)
	c.Check(groupExists("wharf"), check.Equals, true)
	unit, err := os.ReadFile("/lib/systemd/system/wharf.service")
	c.Assert(err, check.IsNil)
	c.Check(strings.Contains(string(unit), "\nExecStart=/usr/bin/wharfd -H fd://\n"), check.Equals, true, check.Commentf("%s", unit))

	// The version the package was built from.
	out := runIn(c, "/", "/usr/bin/wharfd", "--version")
	c.Check(strings.HasPrefix(out, "wharfd version "+describe+", build "), check.Equals, true, check.Commentf("wharfd --version: %q, want %s", out, describe))
	cmd := exec.Command("/usr/bin/wharf", "-H", "unix://"+filepath.Join(c.MkDir(), "none.sock"), "version", "--format", "{{.Client.Version}}")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	_ = cmd.Run() // no daemon: the client part is printed, then the dial error
	c.Check(strings.TrimSpace(stdout.String()), check.Equals, describe)

	// The example configuration is one wharfd accepts.
	s.checkExampleConfig(c)

	if sa, err := exec.LookPath("systemd-analyze"); err == nil {
		cmd := exec.Command(sa, "verify", "/lib/systemd/system/wharf.socket", "/lib/systemd/system/wharf.service")
		out, err := cmd.CombinedOutput()
		c.Check(err, check.IsNil, check.Commentf("systemd-analyze verify:\n%s", out))
		c.Check(strings.Contains(string(out), "wharf"), check.Equals, false, check.Commentf("systemd-analyze verify:\n%s", out))
	} else {
		c.Logf("no systemd-analyze on PATH: the units are not verified")
	}

	runIn(c, "/", "dpkg", "-r", "wharf")
	c.Check(leftBehind(files), check.HasLen, 0)
	runIn(c, "/", "dpkg", "--purge", "wharf")
	c.Check(dpkgStatus("wharf"), check.Equals, "")
	c.Check(leftBehind(files), check.HasLen, 0)
	// A directory dpkg -L listed may stay only when another package owns it
	// too, or something else has put files in it.
	for _, p := range list {
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		ents, _ := os.ReadDir(p)
		if len(ents) == 0 && exec.Command("dpkg-query", "-S", p).Run() != nil {
			c.Errorf("empty directory %s left behind by dpkg -P wharf", p)
		}
	}
	c.Check(enablementLinks(), check.DeepEquals, linksBefore)
}

func leftBehind(files []string) []string {
	var left []string
	for _, p := range files {
		if _, err := os.Lstat(p); err == nil {
			left = append(left, p)
		}
	}
	return left
}

// checkExampleConfig starts the installed wharfd on the example daemon.json
// (data and socket in a temporary directory) and waits for its socket: an
// unknown key or a bad value would stop it at start-up.
func (s *DebPackageSuite) checkExampleConfig(c *check.C) {
	dir := c.MkDir()
	sock := filepath.Join(dir, "wharf.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/wharfd",
		"--config-file", "/usr/share/doc/wharf/daemon.json.example",
		"--data-root", filepath.Join(dir, "root"), "-H", "unix://"+sock)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	c.Assert(cmd.Start(), check.IsNil)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		select {
		case err := <-exited:
			c.Fatalf("wharfd with daemon.json.example exited: %v\n%s", err, logs.String())
		case <-ctx.Done():
			c.Fatalf("wharfd with daemon.json.example: no socket in 20 s\n%s", logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		if conn, err := net.Dial("unix", sock); err == nil {
			conn.Close()
			break
		}
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}
