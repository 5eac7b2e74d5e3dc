package integration

import (
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

func TestResumeSuite(t *testing.T) { t.Parallel(); runSuite(t, &ResumeSuite{}) }

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

// imageID is the ID the suite's wharfd has for ref.
func (s *ResumeSuite) imageID(c *check.C, ref string) string { return s.imageIDOn(c, s.d, ref) }

func (s *ResumeSuite) imageIDOn(c *check.C, d *Daemon, ref string) string {
	var insp struct {
		ID string `json:"Id"`
	}
	r := d.oneShot(c, http.MethodGet, "/v1.50/images/"+ref+"/json")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	r.JSON(c, &insp)
	return insp.ID
}

// partialBytes is what d keeps under partial/ (graph/store/partial.go).
func partialBytes(d *Daemon) int64 { return dirBytes(filepath.Join(d.Root, "partial")) }

// dirBytes is the bytes of the regular files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// TestPullKilledAt60PercentResumesAfterRestart: wharfd is killed (-9)
// once 60 % of the image has passed the proxy and been written; started
// again, it shows the partial downloads, and the same pull downloads at
// most half the image.
func (s *ResumeSuite) TestPullKilledAt60PercentResumesAfterRestart(c *check.C) {
	d := NewDaemon(c)
	// One download at a time: at 60 % of three layers the first is
	// complete in blobs/ (the scrub's to move after the restart) and the
	// second partial, every run.
	d.Start(c, "--max-concurrent-downloads", "1")
	s.killAtEnd(d)
	defer d.Kill() // a failure must not leave its pull running into the next test
	img := pushImage(c, s.reg, "resume/kill", "1", testregistry.ImageOptions{Layers: resumeLayers, LayerSize: resumeLayerSize})
	ref := s.proxy.Host + "/resume/kill:1"
	s.proxy.SetCuts(0, 0, false)
	hold := img.Size() * 6 / 10
	s.proxy.Hold(hold)
	defer s.proxy.Release()

	// The pull's client; its outcome does not matter: wharfd dies under it.
	pulled := make(chan struct{})
	go func() {
		defer close(pulled)
		cmd := exec.Command(bins.Wharf, "-H", d.Host, "pull", ref)
		cmd.Env = append(os.Environ(), d.cliEnv()...)
		_ = cmd.Run()
	}()
	// Held at 60 %: every byte the proxy sent is on disk — in partials, or
	// in blobs/ for a layer that was complete (the config, fetched whole,
	// may not be written yet).
	config := int64(len(img.Config.Data))
	ok := waitFor(2*time.Minute, func() bool {
		return s.proxy.BlobBytes.Load() == hold && partialBytes(d)+dirBytes(filepath.Join(d.Root, "blobs")) >= hold-config
	})
	c.Assert(ok, check.Equals, true, check.Commentf("proxy sent %d of %d, partials %d\n%s", s.proxy.BlobBytes.Load(), hold, partialBytes(d), d.Log()))
	d.Kill()
	<-pulled
	s.proxy.Release()

	d.Start(c, "--max-concurrent-downloads", "1")
	// The background scrub moves any complete layer (no record uses it)
	// to partial/ after the socket answers; `system check` waits for the
	// scrub under way and reports it, so partial/ is read after its
	// report, never racing it.
	rep, code := systemCheck(c, d)
	c.Assert(code, check.Equals, 0, check.Commentf("%s", rep))
	c.Assert(rep.LastScrub, check.NotNil, check.Commentf("the check reported no scrub"))
	c.Assert(rep.LastScrub.Error, check.Equals, "")
	kept := partialBytes(d)
	c.Assert(kept >= hold-config, check.Equals, true, check.Commentf("kept %d of %d", kept, hold))
	c.Assert(rep.Problems, check.HasLen, 0, check.Commentf("%s", rep))
	// Downloaded one at a time, the layers the proxy sent bytes of: the
	// complete ones and the one it held.
	touched := int(hold/resumeLayerSize) + 1
	c.Assert(rep.PartialDownloads, check.Equals, touched)
	c.Assert(rep.PartialBytes, check.Equals, kept)
	var du struct{ PartialDownloads, PartialDownloadsSize int64 }
	r := d.oneShot(c, http.MethodGet, "/v1.50/system/df")
	r.JSON(c, &du)
	c.Assert(du.PartialDownloadsSize, check.Equals, kept, check.Commentf("%s", r))
	c.Assert(du.PartialDownloads, check.Equals, int64(touched), check.Commentf("%s", r))

	s.proxy.SetCuts(0, 0, false)
	res := d.Wharf(c, "pull", ref)
	c.Assert(res.ExitCode, check.Equals, 0, check.Commentf("%s\n%s", res, d.Log()))
	got := s.proxy.BlobBytes.Load()
	c.Logf("killed at %d of %d bytes (%d kept); the pull after the restart downloaded %d (%.3f of the image)",
		hold, img.Size(), kept, got, float64(got)/float64(img.Size()))
	c.Assert(float64(got) <= 0.5*float64(img.Size()), check.Equals, true, check.Commentf("downloaded %d of %d after the restart", got, img.Size()))
	c.Assert(partialBytes(d), check.Equals, int64(0))
	c.Assert(s.imageIDOn(c, d, ref), check.Equals, img.ID())
	assertStoreClean(c, d, "after the resumed pull")
}

// TestCopyThroughCuts: the source side of `wharf copy` reads blobs through
// the same resuming reader: 3 cuts per blob at the source, every byte of
// the image read about once, and the destination holds the image.
func (s *ResumeSuite) TestCopyThroughCuts(c *check.C) {
	dst := s.startRegistry(c, testregistry.Options{})
	img := pushImage(c, s.reg, "resume/copy", "1", testregistry.ImageOptions{Layers: resumeLayers, LayerSize: resumeLayerSize})
	s.proxy.SetCuts(3, resumeCutAfter, false)
	r := s.d.Wharf(c, "copy", s.proxy.Host+"/resume/copy:1", dst.Host+"/resume/copy:1")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s\n%s", r, s.d.Log()))
	got := s.proxy.BlobBytes.Load()
	c.Check(float64(got) <= 1.10*float64(img.Size()), check.Equals, true, check.Commentf("read %d for an image of %d", got, img.Size()))
	c.Check(dstDigest(c, dst, "resume/copy", "1"), check.Equals, img.Manifest.Digest)
}
