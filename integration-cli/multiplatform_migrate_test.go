package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// preMultiPlatformCommit is the last commit whose store records one
// platform per image (before issue 23's Platforms field).
const preMultiPlatformCommit = "85bcee0"

// buildOldWharfd builds wharfd at commit from this repository's history
// into dir (git archive, go build: the module cache is shared). It skips
// when the history does not have the commit (a shallow clone).
func buildOldWharfd(c *check.C, commit, dir string) string {
	root, err := testregistry.RepoRoot()
	c.Assert(err, check.IsNil)
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		c.Skip("commit " + commit + " not in this clone's history: " + strings.TrimSpace(string(out)))
	}
	src := filepath.Join(dir, "src")
	c.Assert(os.MkdirAll(src, 0o755), check.IsNil)
	arch := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, commit, src)
	out, err := arch.CombinedOutput()
	c.Assert(err, check.IsNil, check.Commentf("%s", out))
	bin := filepath.Join(dir, "wharfd-old")
	build := exec.Command("go", "build", "-o", bin, "./cmd/wharfd")
	build.Dir = src
	out, err = build.CombinedOutput()
	c.Assert(err, check.IsNil, check.Commentf("%s", out))
	return bin
}

// A data-root written by the wharfd before issue 23 (one platform per
// image: the tag on the platform pulled last, the other platform's image
// left dangling) is opened as it is — the record format is unchanged
// but for the optional Platforms field, so nothing is rewritten: images,
// IDs, tags and the list are intact and the store check is clean. A pull
// of the other platform then joins the two records of the index into one
// image holding both.
func (s *MultiPlatformSuite) TestStoreFromBeforeMigrates(c *check.C) {
	old := buildOldWharfd(c, preMultiPlatformCommit, c.MkDir())
	ix := pushIndex(c, s.reg, "mp/old", "1", testregistry.IndexOptions{})
	single := pushImage(c, s.reg, "mp/single", "1", testregistry.ImageOptions{})
	host, other, hostP, otherP := hostAndOther(ix)
	ref := s.reg.Host + "/mp/old:1"

	d := NewDaemon(c)
	saved := bins.Wharfd
	bins.Wharfd = old
	err := d.StartWithError()
	bins.Wharfd = saved
	c.Assert(err, check.IsNil, check.Commentf("%s", d.Log()))
	s.killAtEnd(d)
	d.DockerOK(c, "pull", "--platform", otherP, ref)
	d.DockerOK(c, "pull", "--platform", hostP, ref)
	d.DockerOK(c, "pull", s.reg.Host+"/mp/single:1")
	listFmt := []string{"images", "-a", "--no-trunc", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}"}
	before := d.DockerOK(c, listFmt...).Stdout
	c.Assert(strings.Contains(before, ref+" "+host.Config.Digest), check.Equals, true, check.Commentf("%s", before))
	c.Assert(strings.Contains(before, "<none>:<none> "+other.Config.Digest), check.Equals, true, check.Commentf("old wharfd: the other platform is dangling\n%s", before))
	d.Stop(c)

	d.Start(c)
	after := d.DockerOK(c, listFmt...).Stdout
	c.Check(after, check.Equals, before)
	c.Check(strings.TrimSpace(d.DockerOK(c, "image", "inspect", "-f", "{{.ID}}", s.reg.Host+"/mp/single:1").Stdout), check.Equals, single.Config.Digest)
	c.Check(strings.TrimSpace(d.DockerOK(c, "image", "inspect", "-f", "{{.ID}}", ref).Stdout), check.Equals, host.Config.Digest)
	// The old record is one platform: the other is not part of it.
	c.Check(d.Docker(c, "image", "inspect", "--platform", otherP, ref).ExitCode, check.Not(check.Equals), 0)
	d.WharfOK(c, "system", "check")

	d.DockerOK(c, "pull", "--platform", otherP, ref)
	joined := d.DockerOK(c, listFmt...).Stdout
	c.Check(strings.Contains(joined, other.Config.Digest), check.Equals, false, check.Commentf("the dangling record joined the image\n%s", joined))
	c.Check(strings.TrimSpace(d.DockerOK(c, "image", "inspect", "-f", "{{.ID}}", "--platform", otherP, ref).Stdout), check.Equals, other.Config.Digest)
	c.Check(strings.TrimSpace(d.DockerOK(c, "image", "inspect", "-f", "{{.ID}}", ref).Stdout), check.Equals, host.Config.Digest)
	d.WharfOK(c, "system", "check")
}
