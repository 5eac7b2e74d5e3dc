package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// WharfCLISuite drives wharfd with wharf's own CLI, docker's flags and output.
type WharfCLISuite struct {
	suiteFixture
	d *Daemon
}

func TestWharfCLISuite(t *testing.T) { t.Parallel(); runSuite(t, &WharfCLISuite{}) }

func (s *WharfCLISuite) SetUpSuite(c *check.C) { s.d = s.startDaemon(c) }
func (s *WharfCLISuite) importFile(c *check.C, ref string, args ...string) string {
	tarb, err := testregistry.RandomTar("f.bin", 150)
	c.Assert(err, check.IsNil)
	path := filepath.Join(c.MkDir(), "rootfs.tar")
	c.Assert(os.WriteFile(path, tarb, 0o644), check.IsNil)
	argv := append(append([]string{"import"}, args...), path)
	if ref != "" {
		argv = append(argv, ref)
	}
	out := s.d.WharfOK(c, argv...)
	id := strings.TrimSpace(out.Stdout)
	c.Assert(id, check.Matches, `sha256:[0-9a-f]{64}`, check.Commentf("%s", out))
	return id
}

func (s *WharfCLISuite) TestWharfImportAndImagesFlags(c *check.C) {
	id := s.importFile(c, "wcli/img:1", "-c", "LABEL team=wharf", "-m", "from the wharf CLI")
	dangling := s.importFile(c, "")
	short := strings.TrimPrefix(id, "sha256:")[:12]

	table := s.d.WharfOK(c, "images", "wcli/img")
	lines := strings.Split(strings.TrimSpace(table.Stdout), "\n")
	c.Assert(lines, check.HasLen, 2, check.Commentf("%s", table.Stdout))
	c.Assert(lines[0], check.Matches, `REPOSITORY\s+TAG\s+IMAGE ID\s+CREATED\s+SIZE`)
	c.Assert(lines[1], check.Matches, `wcli/img\s+1\s+`+short+`\s+.*`)

	q := s.d.WharfOK(c, "images", "-q", "wcli/img")
	c.Assert(strings.TrimSpace(q.Stdout), check.Equals, short)
	qa := s.d.WharfOK(c, "images", "-a", "-q", "--no-trunc")
	c.Assert(qa.Stdout, check.Matches, `(?s).*`+dangling+`.*`)
	c.Assert(qa.Stdout, check.Matches, `(?s).*`+id+`.*`)

	dg := s.d.WharfOK(c, "images", "--digests", "wcli/img")
	c.Assert(dg.Stdout, check.Matches, `(?s)REPOSITORY\s+TAG\s+DIGEST\s+IMAGE ID.*wcli/img\s+1\s+<none>\s+`+short+`.*`)

	f := s.d.WharfOK(c, "images", "--filter", "label=team=wharf", "--format", "{{.Repository}}:{{.Tag}}")
	c.Assert(strings.TrimSpace(f.Stdout), check.Equals, "wcli/img:1")
	f = s.d.WharfOK(c, "images", "--filter", "dangling=true", "-q", "--no-trunc")
	c.Assert(f.Stdout, check.Matches, `(?s).*`+dangling+`.*`)
	c.Assert(strings.Contains(f.Stdout, id), check.Equals, false)
	j := s.d.WharfOK(c, "images", "--format", "json", "wcli/img")
	c.Assert(strings.TrimSpace(j.Stdout), check.Matches, `\{.*"Repository":"wcli/img".*\}`)

	bad := s.d.Wharf(c, "images", "--filter", "bogus=1")
	c.Assert(bad.ExitCode, check.Not(check.Equals), 0)
	c.Assert(bad.Stderr, check.Matches, `(?s).*Invalid filter 'bogus'.*`)
}

func (s *WharfCLISuite) TestWharfInspectFormatsTypesAndMissingNames(c *check.C) {
	id := s.importFile(c, "wcli/inspect:1", "-c", "LABEL a=b")
	out := s.d.WharfOK(c, "inspect", "wcli/inspect:1")
	c.Assert(out.Stdout, check.Matches, `(?s)\[\n    \{\n        "Id": "`+id+`",.*`) // docker's 4-space indent
	arr := inspectArray(c, out.Stdout)
	c.Assert(arr[0]["Id"], check.Equals, id)

	f := s.d.WharfOK(c, "inspect", "--format", "{{.Id}}", "wcli/inspect:1")
	c.Assert(f.Stdout, check.Equals, id+"\n")
	f = s.d.WharfOK(c, "inspect", "--format", "{{json .Config.Labels}}", "wcli/inspect:1")
	c.Assert(f.Stdout, check.Equals, `{"a":"b"}`+"\n")
	f = s.d.WharfOK(c, "inspect", "--type", "image", "-f", "{{.Os}}", "wcli/inspect:1")
	c.Assert(f.Stdout, check.Equals, "linux\n")
	bad := s.d.Wharf(c, "inspect", "--type", "volume", "wcli/inspect:1")
	c.Assert(bad.ExitCode, check.Not(check.Equals), 0)

	multi := s.d.Wharf(c, "inspect", "--format", "{{.Id}}", "wcli/inspect:1", "wcli/missing-x:1", "wcli/missing-y")
	c.Assert(multi.ExitCode, check.Equals, 1, check.Commentf("%s", multi))
	c.Assert(multi.Stdout, check.Equals, id+"\n", check.Commentf("found names are still printed"))
	c.Assert(multi.Stderr, check.Matches, `(?s).*Error: No such image or container: wcli/missing-x:1.*`)
	c.Assert(multi.Stderr, check.Matches, `(?s).*Error: No such image or container: wcli/missing-y.*`)
	multi = s.d.Wharf(c, "inspect", "wcli/missing-x:1")
	c.Assert(multi.ExitCode, check.Equals, 1)
	c.Assert(strings.TrimSpace(multi.Stdout), check.Equals, "[]")
}

func (s *WharfCLISuite) TestWharfHistoryTagRmi(c *check.C) {
	id := s.importFile(c, "wcli/hist:1", "-m", "history message")
	h := s.d.WharfOK(c, "history", "--no-trunc", "--format", "{{.ID}}|{{.Comment}}", "wcli/hist:1")
	c.Assert(h.Stdout, check.Matches, `(?s)`+id+`\|history message\n.*`)
	hq := s.d.WharfOK(c, "history", "-q", "wcli/hist:1")
	c.Assert(strings.TrimSpace(hq.Stdout), check.Matches, `(?s)`+strings.TrimPrefix(id, "sha256:")[:12]+`.*`)

	s.d.WharfOK(c, "tag", "wcli/hist:1", "wcli/hist2:x")
	c.Assert(strings.TrimSpace(s.d.WharfOK(c, "images", "-q", "--no-trunc", "wcli/hist2").Stdout), check.Equals, id)
	miss := s.d.Wharf(c, "tag", "wcli/none:1", "wcli/none2:1")
	c.Assert(miss.ExitCode, check.Not(check.Equals), 0)
	c.Assert(miss.Stderr, check.Matches, `(?s).*No such image: wcli/none:1.*`)

	short := strings.TrimPrefix(id, "sha256:")[:12]
	conflict := s.d.Wharf(c, "rmi", short)
	c.Assert(conflict.ExitCode, check.Equals, 1)
	c.Assert(conflict.Stderr, check.Matches, `(?s).*must be forced.*`)
	rm := s.d.WharfOK(c, "rmi", "-f", short)
	c.Assert(rm.Stdout, check.Matches, `(?s).*Untagged: wcli/hist:1\n.*`)
	c.Assert(rm.Stdout, check.Matches, `(?s).*Untagged: wcli/hist2:x\n.*`)
	c.Assert(rm.Stdout, check.Matches, `(?s).*\nDeleted: `+id+`\n$`)
}

func (s *WharfCLISuite) TestWharfSaveLoad(c *check.C) {
	id := s.importFile(c, "wcli/saved:1")
	path := filepath.Join(c.MkDir(), "out.tar")
	s.d.WharfOK(c, "save", "-o", path, "wcli/saved:1")
	fi, err := os.Stat(path)
	c.Assert(err, check.IsNil)
	c.Assert(fi.Size() > 0, check.Equals, true)

	fresh := StartDaemon(c)
	defer fresh.Stop(c)
	l := fresh.WharfOK(c, "load", "-i", path)
	c.Assert(l.Stdout, check.Matches, `(?s).*Loaded image: wcli/saved:1.*`)
	c.Assert(strings.TrimSpace(fresh.WharfOK(c, "images", "-q", "--no-trunc", "wcli/saved").Stdout), check.Equals, id)
	lq := fresh.WharfOK(c, "load", "-q", "-i", path)
	c.Assert(lq.Stdout, check.Matches, `(?s).*Loaded image: wcli/saved:1.*`)

	missing := s.d.Wharf(c, "save", "-o", filepath.Join(c.MkDir(), "x.tar"), "wcli/nosuch:1")
	c.Assert(missing.ExitCode, check.Not(check.Equals), 0)
	c.Assert(missing.Stderr, check.Matches, `(?s).*No such image: wcli/nosuch:1.*`)
}

func (s *WharfCLISuite) TestWharfEventsWithSinceUntil(c *check.C) {
	// To the nanosecond: a whole second before now would take in the
	// events of the test that ran just before.
	now := time.Now()
	since := fmt.Sprintf("%d.%09d", now.Unix(), now.Nanosecond())
	id := s.importFile(c, "wcli/events:1")
	s.d.WharfOK(c, "tag", "wcli/events:1", "wcli/events:2")
	until := time.Now().Add(time.Second).Unix()
	ev := s.d.WharfOK(c, "events", "--since", since, "--until", fmt.Sprint(until), "--filter", "event=tag", "--format", "{{.Action}} {{.Actor.ID}} {{.Actor.Attributes.name}}")
	// Import with a name logs its own tag event (wcli/events:1), as dockerd does.
	c.Assert(ev.Stdout, check.Matches, `(?s)(.*\n)?tag `+id+` wcli/events:2\n`)
	for _, line := range strings.Split(strings.TrimSpace(ev.Stdout), "\n") {
		c.Assert(line, check.Matches, `tag `+id+` wcli/events:[12]`)
	}
	plain := s.d.WharfOK(c, "events", "--since", since, "--until", fmt.Sprint(until))
	c.Assert(plain.Stdout, check.Matches, `(?s).*image import `+id+`.*`)
}

// completions runs `wharf __complete ARGS…` (what the bash, zsh and fish
// scripts run on TAB) and returns the candidates and the directive line.
func completions(c *check.C, r Result) ([]string, string) {
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	c.Assert(len(lines) > 0 && strings.HasPrefix(lines[len(lines)-1], ":"), check.Equals, true, check.Commentf("%s", r))
	var names []string
	names = append(names, lines[:len(lines)-1]...)
	return names, lines[len(lines)-1]
}

// TAB after rmi, inspect, tag, push, save and history offers the local image
// names, from the daemon, as docker's completion does (issue 11 #11).
func (s *WharfCLISuite) TestWharfCompletesLocalImageNames(c *check.C) {
	s.importFile(c, "wcli/comp:1")
	s.importFile(c, "wcli/comp:2")
	s.importFile(c, "wcli/other:1")
	both := []string{"wcli/comp:1", "wcli/comp:2"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"rmi", "wcli/comp"}, both},
		{[]string{"rmi", "wcli/comp:1", "wcli/comp"}, both},
		{[]string{"inspect", "wcli/co"}, both},
		{[]string{"inspect", "-f", "{{.Id}}", "wcli/comp"}, both},
		{[]string{"tag", "wcli/comp"}, both},
		{[]string{"tag", "wcli/comp:1", "wcli/comp"}, both},
		{[]string{"tag", "wcli/comp:1", "x:1", "wcli/comp"}, nil},
		{[]string{"push", "wcli/comp"}, both},
		{[]string{"push", "wcli/comp:1", "wcli/comp"}, nil},
		{[]string{"save", "-o", "/dev/null", "wcli/comp"}, both},
		{[]string{"history", "wcli/comp"}, both},
		{[]string{"history", "wcli/comp:1", "wcli/comp"}, nil},
		{[]string{"rmi", "wcli/nothing"}, nil},
	} {
		got, directive := completions(c, s.d.Wharf(c, append([]string{"__complete"}, tc.args...)...))
		c.Check(got, check.DeepEquals, tc.want, check.Commentf("%v", tc.args))
		c.Check(directive, check.Equals, ":4", check.Commentf("%v: no file names for image arguments", tc.args)) // ShellCompDirectiveNoFileComp
	}
	// All names when nothing is typed yet; the other images are there too.
	all, _ := completions(c, s.d.Wharf(c, "__complete", "rmi", ""))
	c.Assert(strings.Join(all, " "), check.Matches, `.*wcli/comp:1 wcli/comp:2.*wcli/other:1.*`)

	// The daemon from $WHARF_HOST, as for every other command.
	env, _ := completions(c, runCmd(c, nil, s.d.cliEnv(), bins.Wharf, "__complete", "history", "wcli/comp"))
	c.Assert(env, check.DeepEquals, both)

	// Without a daemon: no candidates, no error in the user's line, at once.
	r := runCmd(c, nil, s.d.cliEnv(), bins.Wharf, "-H", "unix:///nonexistent/wharf.sock", "__complete", "rmi", "wcli/")
	got, directive := completions(c, r)
	c.Assert(got, check.HasLen, 0)
	c.Assert(directive, check.Equals, ":1") // ShellCompDirectiveError: the shell shows nothing
}

// A typo in a script must fail it: unknown commands, unknown flags and
// wrong argument counts exit non-zero with the docker CLI 28's words
// (issue 11 #8). Flag errors exit 125, as docker's; the others 1.
func (s *WharfCLISuite) TestWharfRefusesUnknownCommandsFlagsAndArguments(c *check.C) {
	for _, tc := range []struct {
		args   []string
		status int
		stderr string // exact
	}{
		{[]string{"cpoy", "a", "b"}, 1, "wharf: unknown command: wharf cpoy\n\nRun 'wharf --help' for more information\n"},
		{[]string{"imagse"}, 1, "wharf: unknown command: wharf imagse\n\nRun 'wharf --help' for more information\n"},
		{[]string{"system", "bogus"}, 1, "wharf: unknown command: wharf system bogus\n\nUsage:  wharf system COMMAND\n\nRun 'wharf system --help' for more information\n"},
		{[]string{"completion", "bogus"}, 1, "wharf: unknown command: wharf completion bogus\n\nUsage:  wharf completion\n\nRun 'wharf completion --help' for more information\n"},
		{[]string{"help", "bogus"}, 1, "unknown help topic: bogus\n"},
		{[]string{"help", "system", "bogus"}, 1, "unknown help topic: system bogus\n"},
		{[]string{"--bogus"}, 125, "unknown flag: --bogus\n\nUsage:  wharf [OPTIONS] COMMAND\n\nRun 'wharf --help' for more information\n"},
		{[]string{"images", "--bogus"}, 125, "unknown flag: --bogus\n\nUsage:  wharf images [OPTIONS] [REPOSITORY[:TAG]]\n\nRun 'wharf images --help' for more information\n"},
		{[]string{"system", "prune", "-x"}, 125, "unknown shorthand flag: 'x' in -x\n\nUsage:  wharf system prune [OPTIONS]\n\nRun 'wharf system prune --help' for more information\n"},
		{[]string{"events", "--until"}, 125, "flag needs an argument: --until\n\nUsage:  wharf events [OPTIONS]\n\nRun 'wharf events --help' for more information\n"},
		{[]string{"rmi"}, 1, "wharf: 'wharf rmi' requires at least 1 argument\n\nUsage:  wharf rmi [OPTIONS] IMAGE [IMAGE...]\n\nSee 'wharf rmi --help' for more information\n"},
		{[]string{"tag", "x"}, 1, "wharf: 'wharf tag' requires 2 arguments\n\nUsage:  wharf tag SOURCE_IMAGE[:TAG] TARGET_IMAGE[:TAG]\n\nRun 'wharf tag --help' for more information\n"},
		{[]string{"images", "a", "b"}, 1, "wharf: 'wharf images' requires at most 1 argument\n\nUsage:  wharf images [OPTIONS] [REPOSITORY[:TAG]]\n\nRun 'wharf images --help' for more information\n"},
		{[]string{"import", "a", "b", "c"}, 1, "wharf: 'wharf import' requires at least 1 and at most 2 arguments\n\nUsage:  wharf import [OPTIONS] file|- [REPOSITORY[:TAG]]\n\nRun 'wharf import --help' for more information\n"},
		{[]string{"info", "extra"}, 1, "wharf: 'wharf info' accepts no arguments\n\nUsage:  wharf info [OPTIONS]\n\nRun 'wharf info --help' for more information\n"},
		{[]string{"system", "prune", "extra"}, 1, "wharf: 'wharf system prune' accepts no arguments\n\nUsage:  wharf system prune [OPTIONS]\n\nRun 'wharf system prune --help' for more information\n"},
	} {
		r := s.d.Wharf(c, tc.args...)
		c.Check(r.ExitCode, check.Equals, tc.status, check.Commentf("%s", r))
		c.Check(r.Stderr, check.Equals, tc.stderr, check.Commentf("%s", r))
		c.Check(r.Stdout, check.Equals, "", check.Commentf("%s", r))
	}
	// Help is not an error.
	for _, args := range [][]string{{}, {"system"}, {"help"}, {"help", "images"}, {"images", "--help"}, {"--version"}} {
		r := s.d.Wharf(c, args...)
		c.Check(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
		c.Check(r.Stdout, check.Not(check.Equals), "", check.Commentf("%s", r))
	}
	// One usage line in help, with no "[flags]" tail (docker's has none).
	h := s.d.WharfOK(c, "rmi", "--help")
	c.Assert(h.Stdout, check.Matches, `(?s).*Usage:\n  wharf rmi \[OPTIONS\] IMAGE \[IMAGE\.\.\.\]\n\n.*`)
	h = s.d.WharfOK(c, "system", "--help")
	c.Assert(h.Stdout, check.Matches, `(?s).*Usage:\n  wharf system COMMAND\n\nAvailable Commands:.*`)
}
