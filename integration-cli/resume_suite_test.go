package integration

import (
	"fmt"
	"net/http"
	"strings"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// ResumeSuite pulls through a proxy in front of the real registry that
// cuts blob bodies (issue 20): wharfd resumes with Range from the bytes it
// has, and keeps what it has across a failed pull and a restart. The bytes
// are counted at the proxy.
type ResumeSuite struct {
	suiteFixture
	reg   *testregistry.Registry
	proxy *hostile.CutProxy
	d     *Daemon
}

var _ = check.Suite(&ResumeSuite{})

// The image of the table: 3 layers of 8 MiB of random bytes (they do not
// compress), each GET cut after 1 MiB of body, so 5 cuts still fall inside
// a layer (the 3 MB cut of an 8 MB image would leave nothing to cut
// after the second).
const (
	resumeLayers    = 3
	resumeLayerSize = 8 << 20
	resumeCutAfter  = 1 << 20
)

func (s *ResumeSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
	var err error
	s.proxy, err = hostile.NewCutProxy(s.reg.DirectURL)
	c.Assert(err, check.IsNil)
	s.closeAtEnd(s.proxy.Close)
	s.d = s.startDaemon(c)
}

// TestPullThroughCuts is issue 20's table: dockerd pulls through cut
// bodies, wharf failed with `unexpected EOF`. wharf pulls through 1, 3 and
// 5 cuts per blob, downloading at most 1.10× the image, and through a
// registry that ignores Range (each cut costs the bytes before it again).
func (s *ResumeSuite) TestPullThroughCuts(c *check.C) {
	for i, tc := range []struct {
		cuts        int
		ignoreRange bool
		maxRatio    float64
	}{
		{cuts: 1, maxRatio: 1.10},
		{cuts: 3, maxRatio: 1.10},
		{cuts: 5, maxRatio: 1.10},
		// A 200 to the Range: the first MiB of each layer comes twice.
		{cuts: 1, ignoreRange: true, maxRatio: 1 + float64(resumeCutAfter*resumeLayers)/float64(resumeLayers*resumeLayerSize) + 0.02},
	} {
		name := fmt.Sprintf("%d cuts per blob, ignore Range %v", tc.cuts, tc.ignoreRange)
		repo := fmt.Sprintf("resume/cut%d", i)
		img := pushImage(c, s.reg, repo, "1", testregistry.ImageOptions{Layers: resumeLayers, LayerSize: resumeLayerSize})
		s.proxy.SetCuts(tc.cuts, resumeCutAfter, tc.ignoreRange)
		r := s.d.Wharf(c, "pull", s.proxy.Host+"/"+repo+":1")
		c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s: %s\n%s", name, r, s.d.Log()))
		got := s.proxy.BlobBytes.Load()
		ratio := float64(got) / float64(img.Size())
		c.Logf("%s: %d bytes for an image of %d (%.3f×), blob GETs %d", name, got, img.Size(), ratio, len(s.proxy.Ranges()))
		c.Check(ratio <= tc.maxRatio, check.Equals, true, check.Commentf("%s: downloaded %.3f× the image", name, ratio))
		// Every blob GET after a cut asked for the rest (layers + config).
		ranged := 0
		for _, rg := range s.proxy.Ranges() {
			if strings.HasPrefix(rg, "bytes=") {
				ranged++
			}
		}
		c.Check(ranged, check.Equals, tc.cuts*resumeLayers, check.Commentf("%s: %q", name, s.proxy.Ranges()))
		c.Check(s.imageID(c, s.proxy.Host+"/"+repo+":1"), check.Equals, img.ID())
	}
	assertStoreClean(c, s.d, "after the cut table")
}

// imageID is the ID wharfd has for ref.
func (s *ResumeSuite) imageID(c *check.C, ref string) string {
	var insp struct{ ID string `json:"Id"` }
	r := s.d.oneShot(c, http.MethodGet, "/v1.50/images/"+ref+"/json")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	r.JSON(c, &insp)
	return insp.ID
}
