package integration

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"gopkg.in/check.v1"

	wclient "github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// PullCostSuite runs `wharf pull --dry-run` through the real wharfd and
// wharf against the real registry, counting the requests at the registry:
// one HEAD and at most one manifest GET, never a blob; and the bytes it
// names are what the pull that follows downloads, counted at the registry
// by the blobs it served.
type PullCostSuite struct {
	suiteFixture
	reg *testregistry.Registry
	d   *Daemon
}

func TestPullCostSuite(t *testing.T) { t.Parallel(); runSuite(t, &PullCostSuite{}) }

func (s *PullCostSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.d = s.startDaemon(c)
}

// twoVersions pushes repo:1 and repo:2, which share their two lower
// layers and differ in the top one, and returns them.
func twoVersions(c *check.C, reg *testregistry.Registry, repo string) (v1, v2 *testregistry.Image) {
	base := []contentsEntry{
		{typ: tar.TypeDir, name: "usr/", mode: 0o755},
		{typ: tar.TypeReg, name: "usr/lib/libfoo.so.1", mode: 0o644, body: strings.Repeat("libfoo ", 4000)},
	}
	mid := []contentsEntry{{typ: tar.TypeReg, name: "opt/tool", mode: 0o755, body: strings.Repeat("tool ", 3000)}}
	top := func(v string) []contentsEntry {
		return []contentsEntry{{typ: tar.TypeReg, name: "etc/version", mode: 0o644, body: strings.Repeat(v, 5000)}}
	}
	v1 = contentsImage(c, [][]contentsEntry{base, mid, top("1")})
	v2 = contentsImage(c, [][]contentsEntry{base, mid, top("2")})
	c.Assert(v1.Layers[0].Digest, check.Equals, v2.Layers[0].Digest)
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(reg.Client().PushImage(ctx, repo, "1", v1), check.IsNil)
	c.Assert(reg.Client().PushImage(ctx, repo, "2", v2), check.IsNil)
	return v1, v2
}

// dryRun is `wharf pull --dry-run --format json NAME`'s answer.
func dryRun(c *check.C, d *Daemon, name string, flags ...string) wclient.PullCost {
	r := d.WharfOK(c, append(append([]string{"pull", "--dry-run", "--format", "json"}, flags...), name)...)
	var cost wclient.PullCost
	c.Assert(json.Unmarshal([]byte(r.Stdout), &cost), check.IsNil, check.Commentf("%s", r.Stdout))
	return cost
}

// servedBlobBytes is the bytes of the blobs the registry served since its
// counters were reset (whole GETs of the blobs in sizes, by digest); it
// fails on a blob GET of a digest it does not know or with a Range.
func servedBlobBytes(c *check.C, reg *testregistry.Registry, sizes map[string]int64) (n int64, gets int) {
	for _, l := range reg.Counter.Requests() {
		method, path, _ := strings.Cut(l, " ")
		if method != "GET" || !strings.Contains(path, "/blobs/") || strings.Contains(path, "/uploads") {
			continue
		}
		dg := path[strings.LastIndex(path, "/")+1:]
		size, ok := sizes[dg]
		c.Assert(ok, check.Equals, true, check.Commentf("a blob not of the image: %s", l))
		n += size
		gets++
	}
	return n, gets
}

func blobSizes(imgs ...*testregistry.Image) map[string]int64 {
	out := map[string]int64{}
	for _, img := range imgs {
		out[img.Config.Digest] = int64(len(img.Config.Data))
		for _, l := range img.Layers {
			out[l.Digest] = int64(len(l.Data))
		}
	}
	return out
}

// The update case: version 1 pulled, version 2 asked. One HEAD and one
// manifest GET (the repository was read, so the tag is HEADed first), no
// blob; the bytes are version 2's top layer and config, which is what
// the pull then downloads.
func (s *PullCostSuite) TestDryRunOfAnUpdateMatchesThePull(c *check.C) {
	v1, v2 := twoVersions(c, s.reg, "pc/app")
	s.d.WharfOK(c, "pull", s.reg.Host+"/pc/app:1")

	s.reg.ResetCounters()
	cost := dryRun(c, s.d, s.reg.Host+"/pc/app:2")
	sum := s.reg.Counter.Summary()
	c.Logf("dry run of an update: %s", sum)
	c.Check(s.reg.Counter.Count("HEAD manifests"), check.Equals, 1, check.Commentf("%s", sum))
	c.Check(s.reg.Counter.Count("GET manifests") <= 1, check.Equals, true, check.Commentf("%s", sum))
	c.Check(s.reg.Counter.Count("GET blobs")+s.reg.Counter.Count("HEAD blobs"), check.Equals, 0, check.Commentf("%s", sum))

	top, cfg := int64(len(v2.Layers[2].Data)), int64(len(v2.Config.Data))
	c.Check(cost.Image, check.Equals, s.reg.Host+"/pc/app:2")
	c.Check(cost.Digest, check.Equals, v2.Manifest.Digest)
	c.Check(cost.Present, check.Equals, 2)
	c.Check(cost.TotalLayers, check.Equals, 3)
	c.Assert(cost.Layers, check.HasLen, 1)
	c.Check(cost.Layers[0].Digest, check.Equals, v2.Layers[2].Digest)
	c.Check(cost.Layers[0].Size, check.Equals, top)
	c.Check(cost.ConfigSize, check.Equals, cfg)
	c.Check(cost.Bytes, check.Equals, top+cfg)

	s.reg.ResetCounters()
	s.d.WharfOK(c, "pull", s.reg.Host+"/pc/app:2")
	served, gets := servedBlobBytes(c, s.reg, blobSizes(v1, v2))
	c.Check(served, check.Equals, cost.Bytes, check.Commentf("%s", strings.Join(s.reg.Counter.Requests(), "\n")))
	c.Check(gets, check.Equals, 2)

	// Pulled: nothing left to download, and the table says so.
	s.reg.ResetCounters()
	r := s.d.WharfOK(c, "pull", "--dry-run", s.reg.Host+"/pc/app:2")
	c.Check(r.Stdout, check.Equals, "LAYER     SIZE\n"+s.reg.Host+"/pc/app:2: nothing to download, the store holds all 3 layers\n")
	c.Check(s.reg.Counter.Count("GET blobs"), check.Equals, 0, check.Commentf("%s", s.reg.Counter.Summary()))
}

// A repository the daemon never read: one manifest GET (digest and body in
// one trip), no HEAD needed, no blob; everything is to download.
func (s *PullCostSuite) TestDryRunOfANewRepository(c *check.C) {
	img := pushImage(c, s.reg, "pc/cold", "1", testregistry.ImageOptions{Layers: 2, LayerSize: 4096})
	s.reg.ResetCounters()
	cost := dryRun(c, s.d, s.reg.Host+"/pc/cold:1")
	sum := s.reg.Counter.Summary()
	c.Logf("dry run of a new repository: %s", sum)
	c.Check(s.reg.Counter.Count("HEAD manifests") <= 1, check.Equals, true, check.Commentf("%s", sum))
	c.Check(s.reg.Counter.Count("GET manifests"), check.Equals, 1, check.Commentf("%s", sum))
	c.Check(s.reg.Counter.Count("GET blobs")+s.reg.Counter.Count("HEAD blobs"), check.Equals, 0, check.Commentf("%s", sum))
	want := int64(len(img.Config.Data))
	for _, l := range img.Layers {
		want += int64(len(l.Data))
	}
	c.Check(cost.Bytes, check.Equals, want)
	c.Check(cost.Present, check.Equals, 0)
	c.Check(cost.Layers, check.HasLen, 2)

	// The table: a row per layer, then the totals.
	r := s.d.WharfOK(c, "pull", "--dry-run", s.reg.Host+"/pc/cold:1")
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	c.Assert(lines, check.HasLen, 4, check.Commentf("%s", r.Stdout))
	c.Check(strings.Fields(lines[0]), check.DeepEquals, []string{"LAYER", "SIZE"})
	c.Check(strings.HasPrefix(lines[1], img.Layers[0].Digest), check.Equals, true, check.Commentf("%s", r.Stdout))
	c.Check(lines[3], check.Matches, fmt.Sprintf(`.*pc/cold:1: 2 of 2 layers and the config \(.*\) to download, .* \(%d bytes\); 0 layers already present`, want))

	// A template gets the answer.
	r = s.d.WharfOK(c, "pull", "--dry-run", "--format", "{{.Bytes}} {{len .Layers}}", s.reg.Host+"/pc/cold:1")
	c.Check(r.Stdout, check.Equals, fmt.Sprintf("%d 2\n", want))
}

// A multi-platform tag: the index, then the platform's manifest; a second
// dry run of the unchanged tag is a HEAD alone (both from the cache).
func (s *PullCostSuite) TestDryRunOfAnIndex(c *check.C) {
	ix := pushIndex(c, s.reg, "pc/multi", "1", testregistry.IndexOptions{})
	s.reg.ResetCounters()
	cost := dryRun(c, s.d, s.reg.Host+"/pc/multi:1", "--platform", "linux/arm64/v8")
	sum := s.reg.Counter.Summary()
	c.Logf("dry run of an index: %s", sum)
	c.Check(s.reg.Counter.Count("GET manifests") <= 2, check.Equals, true, check.Commentf("%s", sum))
	c.Check(s.reg.Counter.Count("HEAD manifests") <= 1, check.Equals, true, check.Commentf("%s", sum))
	c.Check(s.reg.Counter.Count("GET blobs"), check.Equals, 0, check.Commentf("%s", sum))
	var arm *testregistry.Image
	for _, img := range ix.Images {
		if img.Platform.Architecture == "arm64" {
			arm = img
		}
	}
	c.Assert(arm, check.NotNil)
	c.Check(cost.Platform, check.Equals, "linux/arm64/v8")
	c.Check(cost.Digest, check.Equals, ix.Digest())
	c.Assert(cost.Layers, check.HasLen, len(arm.Layers))
	c.Check(cost.Layers[0].Digest, check.Equals, arm.Layers[0].Digest)

	s.reg.ResetCounters()
	again := dryRun(c, s.d, s.reg.Host+"/pc/multi:1", "--platform", "linux/arm64/v8")
	c.Check(again.Bytes, check.Equals, cost.Bytes)
	c.Check(s.reg.Counter.Requests(), check.DeepEquals, []string{"HEAD /v2/pc/multi/manifests/1"})
}

func (s *PullCostSuite) TestDryRunRefusals(c *check.C) {
	r := s.d.Wharf(c, "pull", "--dry-run", s.reg.Host+"/pc/none:1")
	c.Check(r.ExitCode, check.Not(check.Equals), 0)
	c.Check(r.Stderr, check.Matches, `(?s).*(No such image|not found|does not exist).*`)
	r = s.d.Wharf(c, "pull", "--dry-run", "-a", s.reg.Host+"/pc/none")
	c.Check(r.ExitCode, check.Not(check.Equals), 0)
	c.Check(r.Stderr, check.Matches, `(?s).*--dry-run and --all-tags.*`)
	r = s.d.Wharf(c, "pull", "--format", "json", s.reg.Host+"/pc/none:1")
	c.Check(r.ExitCode, check.Not(check.Equals), 0)
	c.Check(r.Stderr, check.Matches, `(?s).*--format needs --dry-run.*`)
}

// Behind token auth the dry run presents the stored credentials, as the
// pull does, and only to their registry: refused anonymously, answered
// once logged in, with its one token and no blob; the password is never
// in the daemon's log.
func (s *PullCostSuite) TestDryRunOfAPrivateRepository(c *check.C) {
	reg := s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken})
	img := contentsImage(c, contentsLayers())
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(reg.Client().PushImage(ctx, "pc/private", "1", img), check.IsNil)
	name := reg.Host + "/pc/private:1"

	anon := s.d.Wharf(c, "pull", "--dry-run", name)
	c.Check(anon.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", anon))
	c.Check(anon.Stderr, check.Matches, `(?is).*(unauthorized|authentication required|denied|401|pull access).*`, check.Commentf("%s", anon))

	r := s.d.WharfIn(c, []byte(reg.Password+"\n"), "login", reg.Host, "-u", reg.Username, "--password-stdin")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	defer s.d.Wharf(c, "logout", reg.Host)
	reg.ResetCounters()
	cost := dryRun(c, s.d, name)
	c.Logf("dry run behind token auth: %s", strings.Join(reg.RequestLog(), ", "))
	c.Check(reg.Counter.Count("GET blobs"), check.Equals, 0, check.Commentf("%v", reg.RequestLog()))
	c.Check(cost.Layers, check.HasLen, len(img.Layers))
	c.Check(strings.Contains(s.d.Log(), reg.Password), check.Equals, false, check.Commentf("the daemon's log holds the password"))
}
