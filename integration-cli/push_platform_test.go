package integration

import (
	"strings"
	"testing"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// PushPlatformSuite: `docker push -a --platform P REPO` sends POST
// /images/REPO/push?platform=… without a tag (API ≥ 1.46), as dregsy's
// docker relay does for a mapping with `platform:` (issue 23, defect 2).
type PushPlatformSuite struct {
	suiteFixture
	reg *testregistry.Registry
	d   *Daemon
}

func TestPushPlatformSuite(t *testing.T) { t.Parallel(); runSuite(t, &PushPlatformSuite{}) }

func (s *PushPlatformSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.d = s.startDaemon(c)
}

// Every tag is pushed for the platform it has; a platform a tag lacks
// fails the push naming the tag. Before, wharfd refused the request with
// 400 "--platform needs a tag".
func (s *PushPlatformSuite) TestPushAllTagsWithPlatform(c *check.C) {
	img := pushImage(c, s.reg, "pp/app", "1", testregistry.ImageOptions{})
	src := s.reg.Host + "/pp/app"
	s.d.WharfOK(c, "pull", src+":1")
	s.d.WharfOK(c, "tag", src+":1", s.reg.Host+"/pp/mirror:1")
	s.d.WharfOK(c, "tag", src+":1", s.reg.Host+"/pp/mirror:2")

	r := s.d.DockerOK(c, "push", "-a", "--platform", "linux/amd64", s.reg.Host+"/pp/mirror")
	c.Check(strings.Contains(r.Stdout, "1: digest: "+img.Manifest.Digest), check.Equals, true, check.Commentf("%s", r))
	c.Check(strings.Contains(r.Stdout, "2: digest: "+img.Manifest.Digest), check.Equals, true, check.Commentf("%s", r))
	ctx, cancel := fixtureCtx()
	defer cancel()
	for _, t := range []string{"1", "2"} {
		_, _, d, err := s.reg.Client().GetManifest(ctx, "pp/mirror", t)
		c.Assert(err, check.IsNil, check.Commentf("tag %s", t))
		c.Check(d, check.Equals, img.Manifest.Digest)
	}

	bad := s.d.Docker(c, "push", "-a", "--platform", "linux/s390x", s.reg.Host+"/pp/mirror")
	c.Check(bad.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", bad))
	c.Check(bad.Stdout+bad.Stderr, check.Matches, `(?s).*pp/mirror:1.*linux/s390x.*`)
}
