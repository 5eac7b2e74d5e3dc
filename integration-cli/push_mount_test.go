package integration

import (
	"net/http"
	"strings"
	"testing"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// PushMountSuite: a push tries a cross-repository mount only from a
// repository where the blob is known to be (one the image was pulled from
// or pushed to), and leaves no upload session open at the registry (issue
// 13's push defect: 40 local names on the registry made 80 mount POSTs for
// a 2-blob image and left 80 abandoned _uploads).
type PushMountSuite struct {
	suiteFixture
	reg *testregistry.Registry
	d   *Daemon
}

func TestPushMountSuite(t *testing.T) { t.Parallel(); runSuite(t, &PushMountSuite{}) }

func (s *PushMountSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.d = s.startDaemon(c)
}

// openUploads counts the upload sessions the registry holds open (see
// openUploads in copy_suite_test.go).
func (s *PushMountSuite) openUploads(c *check.C) int { return openUploads(s.reg) }

func (s *PushMountSuite) mountPosts() int {
	n := 0
	for _, l := range s.reg.RequestLog() {
		if strings.HasPrefix(l, "POST ") && strings.Contains(l, "mount=") {
			n++
		}
	}
	return n
}

func (s *PushMountSuite) TestMountOnlyFromKnownRepositoriesAndNoAbandonedUploads(c *check.C) {
	// An image known to be in mount/source (pulled from it), tagged locally
	// under 40 other names on the same registry that were never pushed.
	pushImage(c, s.reg, "mount/source", "1", testregistry.ImageOptions{Layers: 2})
	src := s.reg.Host + "/mount/source"
	_, lines := s.d.Pull(c, src, "1", "")
	c.Assert(lines.Err(), check.Equals, "")
	for i := 0; i < 40; i++ {
		r := s.d.Req(c, http.MethodPost, "/v1.50/images/"+src+":1/tag?repo="+s.reg.Host+"/mount/local"+string(rune('a'+i%26))+string(rune('a'+i/26))+"&tag=1", nil)
		c.Assert(r.Status, check.Equals, http.StatusCreated)
	}
	before := s.openUploads(c)
	s.reg.ResetCounters()
	_, lines = s.d.Push(c, s.reg.Host+"/mount/localaa", "1", "")
	c.Assert(lines.Err(), check.Equals, "")
	// Two layers and a config: one mount each at most, from mount/source.
	c.Check(s.mountPosts() <= 3, check.Equals, true, check.Commentf("%d mount POSTs:\n%s", s.mountPosts(), strings.Join(s.reg.RequestLog(), "\n")))
	c.Check(lines.Has("Mounted from mount/source"), check.Equals, true, check.Commentf("%v", lines.Texts()))
	c.Check(s.openUploads(c)-before, check.Equals, 0, check.Commentf("upload sessions left open"))

	// An image never pushed or pulled anywhere on the registry: no mount
	// attempt at all, and still nothing left open.
	s.d.Import(c, s.reg.Host+"/mount/fresh:1")
	for i := 0; i < 10; i++ {
		r := s.d.Req(c, http.MethodPost, "/v1.50/images/"+s.reg.Host+"/mount/fresh:1/tag?repo="+s.reg.Host+"/mount/other"+string(rune('a'+i))+"&tag=1", nil)
		c.Assert(r.Status, check.Equals, http.StatusCreated)
	}
	s.reg.ResetCounters()
	_, lines = s.d.Push(c, s.reg.Host+"/mount/fresh", "1", "")
	c.Assert(lines.Err(), check.Equals, "")
	c.Check(s.mountPosts(), check.Equals, 0, check.Commentf("%s", strings.Join(s.reg.RequestLog(), "\n")))
	c.Check(s.openUploads(c)-before, check.Equals, 0, check.Commentf("upload sessions left open"))
}

// Five repositories known to hold the image (it was pulled from each), none
// of which holds its layers any more: each layer costs 3 mount POSTs at
// most, every refused mount's session but the last is cancelled (DELETE)
// and the last carries the upload, so the push succeeds and leaves no
// session open.
func (s *PushMountSuite) TestRefusedMountsAreCappedAndCancelled(c *check.C) {
	img := pushImage(c, s.reg, "gone/r1", "1", testregistry.ImageOptions{Layers: 2})
	for i := 1; i <= 5; i++ {
		repo := "gone/r" + string(rune('0'+i))
		if i > 1 {
			ctx, cancel := fixtureCtx()
			c.Assert(s.reg.Client().PushImage(ctx, repo, "1", img), check.IsNil)
			cancel()
		}
		_, lines := s.d.Pull(c, s.reg.Host+"/"+repo, "1", "")
		c.Assert(lines.Err(), check.Equals, "")
	}
	for i := 1; i <= 5; i++ {
		for _, l := range img.Layers {
			req, err := http.NewRequest(http.MethodDelete, s.reg.DirectURL+"/v2/gone/r"+string(rune('0'+i))+"/blobs/"+l.Digest, nil)
			c.Assert(err, check.IsNil)
			resp, err := http.DefaultClient.Do(req)
			c.Assert(err, check.IsNil)
			resp.Body.Close()
			c.Assert(resp.StatusCode, check.Equals, http.StatusAccepted)
		}
	}
	r := s.d.Req(c, http.MethodPost, "/v1.50/images/"+s.reg.Host+"/gone/r1:1/tag?repo="+s.reg.Host+"/gone/target&tag=1", nil)
	c.Assert(r.Status, check.Equals, http.StatusCreated)
	before := s.openUploads(c)
	s.reg.ResetCounters()
	_, lines := s.d.Push(c, s.reg.Host+"/gone/target", "1", "")
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s", strings.Join(s.reg.RequestLog(), "\n")))
	log := strings.Join(s.reg.RequestLog(), "\n")
	deletes := 0
	for _, l := range s.reg.RequestLog() {
		if strings.HasPrefix(l, "DELETE ") {
			deletes++
		}
	}
	// Two layers refused thrice (the config still mounts): 3 + 3 + 1 POSTs,
	// 2 + 2 DELETEs.
	c.Check(s.mountPosts(), check.Equals, 7, check.Commentf("%s", log))
	c.Check(deletes, check.Equals, 4, check.Commentf("%s", log))
	c.Check(s.openUploads(c)-before, check.Equals, 0, check.Commentf("upload sessions left open:\n%s", log))
	c.Check(dstDigest(c, s.reg, "gone/target", "1"), check.Equals, img.Manifest.Digest)
}
