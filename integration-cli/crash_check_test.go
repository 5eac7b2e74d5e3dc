package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/check.v1"
)

// CrashSuite: the store check, start-up check and SIGKILL during writes.
type CrashSuite struct {
	suiteFixture
	regs *registries
}

var _ = check.Suite(&CrashSuite{})

func (s *CrashSuite) SetUpSuite(c *check.C) {
	s.regs = s.startRegistries(c)
}

// systemCheck runs `wharf system check --json` and returns the report and
// the exit code.
func systemCheck(c *check.C, d *Daemon, extra ...string) (checkReport, int) {
	r := d.Wharf(c, append([]string{"system", "check", "--json"}, extra...)...)
	var rep checkReport
	c.Assert(json.Unmarshal([]byte(r.Stdout), &rep), check.IsNil, check.Commentf("%s", r))
	return rep, r.ExitCode
}

type checkReport struct {
	Full     bool
	Images   int
	Blobs    int
	Problems []struct{ Kind, Image, Object, Message string }
}

func (r checkReport) String() string {
	var lines []string
	for _, p := range r.Problems {
		lines = append(lines, p.Kind+": "+p.Message)
	}
	return strings.Join(lines, "\n")
}

func (s *CrashSuite) TestSystemCheckFindsDamageAndStartupReportsIt(c *check.C) {
	d := StartDaemon(c)
	defer d.Kill()
	id := d.Import(c, "damaged:1")
	d.Import(c, "intact:1")

	rep, code := systemCheck(c, d)
	c.Assert(code, check.Equals, 0, check.Commentf("%s", rep))
	c.Assert(rep.Full, check.Equals, true)
	c.Assert(rep.Images, check.Equals, 2)

	// Corrupt the config (same size: only hashing sees it) and remove a
	// layer of the damaged image.
	inspect := d.Inspect(c, "damaged:1")
	layers := inspect["RootFS"].(map[string]any)["Layers"].([]any)
	c.Assert(layers, check.HasLen, 1)
	cfgPath := filepath.Join(d.Root, "blobs", "sha256", strings.TrimPrefix(id, "sha256:"))
	b, err := os.ReadFile(cfgPath)
	c.Assert(err, check.IsNil)
	b[len(b)/2] ^= 0x20
	c.Assert(os.WriteFile(cfgPath, b, 0o644), check.IsNil)

	rep, code = systemCheck(c, d)
	c.Assert(code, check.Equals, 1)
	c.Assert(rep.Problems, check.HasLen, 1, check.Commentf("%s", rep))
	c.Assert(rep.Problems[0].Kind, check.Equals, "digest-mismatch")
	c.Assert(rep.Problems[0].Object, check.Equals, id)

	// The cheap check does not hash: it sees nothing wrong.
	rep, code = systemCheck(c, d, "--quick")
	c.Assert(code, check.Equals, 0, check.Commentf("%s", rep))

	// The plain output: one line per problem, exit status 1.
	r := d.Wharf(c, "system", "check")
	c.Assert(r.ExitCode, check.Equals, 1)
	c.Assert(r.Stdout, check.Matches, "digest-mismatch: blob "+id+": content hashes to sha256:[0-9a-f]{64}\n")

	// A missing blob is found at start-up, logged, and shown in /info.
	d.Stop(c)
	blobs, err := filepath.Glob(filepath.Join(d.Root, "blobs", "sha256", "*"))
	c.Assert(err, check.IsNil)
	var manifest string
	for _, p := range blobs {
		if strings.Contains(readFile(p), `"layers"`) && strings.Contains(readFile(p), strings.TrimPrefix(id, "sha256:")) {
			manifest = p
		}
	}
	c.Assert(manifest, check.Not(check.Equals), "")
	c.Assert(os.Remove(manifest), check.IsNil)
	d.Start(c)
	c.Assert(d.Log(), check.Matches, "(?s).*start-up store check: image "+id+": manifest sha256:[0-9a-f]{64} is missing.*")
	var info struct{ Warnings []string }
	d.Get(c, "/v1.50/info").JSON(c, &info)
	c.Assert(strings.Join(info.Warnings, "\n"), check.Matches, "(?s).*the image store has 1 problem.*wharf system check.*")
	// The intact image still works.
	d.WharfOK(c, "inspect", "intact:1")
}
