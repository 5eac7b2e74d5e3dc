package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"gopkg.in/check.v1"
)

// CrashSuite: the store check, start-up check and SIGKILL during writes.
type CrashSuite struct {
	suiteFixture
	regs *registries
}

func TestCrashSuite(t *testing.T) { t.Parallel(); runSuite(t, &CrashSuite{}) }

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
	// PartialDownloads and PartialBytes: what partial/ holds for the next
	// pull.
	PartialDownloads int
	PartialBytes     int64
	LastScrub        *struct {
		Started, Finished time.Time
		Error             string
		CollectedBlobs    int
		CollectedBytes    int64
		Collected         []string
		Images, Blobs     int
		ProblemCount      int
	}
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
	// The start-up check runs in the background scrub once the API
	// answers; a check waits for it (and the scrub has logged by then).
	rep, code = systemCheck(c, d, "--quick")
	c.Assert(code, check.Equals, 1, check.Commentf("%s", rep))
	c.Assert(rep.LastScrub, check.NotNil)
	c.Assert(rep.LastScrub.ProblemCount, check.Equals, 1, check.Commentf("%+v", rep.LastScrub))
	c.Assert(d.Log(), check.Matches, "(?s).*start-up store check: image "+id+": manifest sha256:[0-9a-f]{64} is missing.*")
	var info struct{ Warnings []string }
	d.Get(c, "/v1.50/info").JSON(c, &info)
	c.Assert(strings.Join(info.Warnings, "\n"), check.Matches, "(?s).*the image store has 1 problem.*wharf system check.*")
	// The intact image still works.
	d.WharfOK(c, "inspect", "intact:1")
}

// TestStartAnswersBeforeTheScrubCollects: start-up no longer walks blobs/
// before the API answers. A daemon on a data-root with an orphan blob (a
// crash's leftover) answers _ping; the background scrub, started once the
// API listens, then moves the orphan out of blobs/ (into the partial
// downloads), and `wharf system check` reports that scrub: its time, the
// blob it collected, its quick check.
func (s *CrashSuite) TestStartAnswersBeforeTheScrubCollects(c *check.C) {
	d := StartDaemon(c)
	defer d.Kill()
	d.Import(c, "kept:1")
	d.Stop(c)
	body := []byte("a layer a killed pull had stored")
	orphan := digest.FromBytes(body)
	orphanPath := filepath.Join(d.Root, "blobs", "sha256", orphan.Encoded())
	c.Assert(os.WriteFile(orphanPath, body, 0o600), check.IsNil)
	logStart := len(d.Log())

	started := time.Now()
	d.Start(c)
	c.Assert(d.Get(c, "/_ping").Status, check.Equals, http.StatusOK)

	rep, code := systemCheck(c, d, "--quick")
	c.Assert(code, check.Equals, 0, check.Commentf("%s", rep))
	c.Assert(rep.LastScrub, check.NotNil)
	sc := rep.LastScrub
	c.Assert(sc.Error, check.Equals, "")
	c.Assert(sc.CollectedBlobs, check.Equals, 1)
	c.Assert(sc.CollectedBytes, check.Equals, int64(len(body)))
	c.Assert(sc.Collected, check.DeepEquals, []string{orphan.String()})
	c.Assert(sc.Images, check.Equals, 1)
	c.Assert(sc.ProblemCount, check.Equals, 0)
	c.Assert(sc.Started.Before(started), check.Equals, false, check.Commentf("scrub started %v, daemon %v", sc.Started, started))
	c.Assert(sc.Finished.Before(sc.Started), check.Equals, false)
	_, err := os.Stat(orphanPath)
	c.Assert(os.IsNotExist(err), check.Equals, true, check.Commentf("orphan still in blobs/: %v", err))
	_, err = os.Stat(filepath.Join(d.Root, "partial", "sha256", orphan.Encoded()))
	c.Assert(err, check.IsNil, check.Commentf("the orphan is not among the partial downloads"))
	// The API listened before the scrub moved the orphan.
	c.Assert(d.Log()[logStart:], check.Matches, "(?s).*API listening on.*unreferenced blobs left by an earlier run moved.*")

	// The plain output says it too (on stderr; stdout lists problems only).
	r := d.Wharf(c, "system", "check", "--quick")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	c.Assert(r.Stdout, check.Equals, "")
	c.Assert(r.Stderr, check.Matches, "(?s).*last scrub: [0-9T:Z-]+, took [0-9.]+m?s\n"+
		"  moved 1 blob\\(s\\) no image used \\([0-9.]+ ?B\\) out of blobs/: "+orphan.String()+"\n"+
		"  checked sizes of 1 images and [0-9]+ blobs: 0 problem\\(s\\)\n.*")
	d.WharfOK(c, "inspect", "kept:1")
}
