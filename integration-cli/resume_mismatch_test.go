package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// ResumeMismatchSuite: partial downloads are named by digest alone, so
// the bytes one registry left in partial/ are resumed by the next pull of
// that digest from any registry. A hostile registry's wrong bytes, kept,
// must not fail the next honest pull.
type ResumeMismatchSuite struct {
	suiteFixture
	reg *testregistry.Registry
}

func TestResumeMismatchSuite(t *testing.T) { t.Parallel(); runSuite(t, &ResumeMismatchSuite{}) }

func (s *ResumeMismatchSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
}

// lastMetricsURL is d's /metrics URL from its log: the last one logged,
// since a restarted daemon appends to the same log on a new port.
func lastMetricsURL(c *check.C, d *Daemon) string {
	m := metricsListening.FindAllStringSubmatch(d.Log(), -1)
	c.Assert(m, check.NotNil, check.Commentf("no metrics address in the log:\n%s", d.Log()))
	return m[len(m)-1][1]
}

// TestHostilePartialDoesNotFailTheHonestPull: a hostile registry (the
// proxy inverting every byte of one layer) is held once 1 MiB of that
// layer has been written, and wharfd is killed, so the partial keeps 1 MiB
// of wrong bytes. Started again, wharfd pulls the same image from an
// honest registry (another host, the same digests): the pull resumes onto
// the kept bytes, proves wrong, drops them and downloads the layer again
// from byte 0, succeeding on its first try. Before, it failed once on the
// digest (only the pull after that succeeded).
func (s *ResumeMismatchSuite) TestHostilePartialDoesNotFailTheHonestPull(c *check.C) {
	bad, err := hostile.NewCutProxy(s.reg.DirectURL)
	c.Assert(err, check.IsNil)
	s.closeAtEnd(bad.Close)
	honest, err := hostile.NewCutProxy(s.reg.DirectURL)
	c.Assert(err, check.IsNil)
	s.closeAtEnd(honest.Close)

	d := NewDaemon(c)
	d.Start(c, "--metrics-addr", "127.0.0.1:0")
	s.killAtEnd(d)
	defer d.Kill() // a failure must not leave its pull running into the next test
	img := pushImage(c, s.reg, "mismatch/img", "1", testregistry.ImageOptions{Layers: 1, LayerSize: 4 << 20})
	layer := img.Layers[0]
	d0, err := digest.Parse(layer.Digest)
	c.Assert(err, check.IsNil)
	partial := filepath.Join(d.Root, "partial", string(d0.Algorithm()), d0.Encoded())

	const kept = 1 << 20
	bad.Corrupt(layer.Digest, true)
	hold := int64(len(img.Config.Data)) + kept
	bad.Hold(hold)
	defer bad.Release()
	pulled := make(chan struct{})
	go func() {
		defer close(pulled)
		cmd := exec.Command(bins.Wharf, "-H", d.Host, "pull", bad.Host+"/mismatch/img:1")
		cmd.Env = append(os.Environ(), d.cliEnv()...)
		_ = cmd.Run() // wharfd dies under it
	}()
	// Held: the config has passed, and the layer's first MiB, inverted, is
	// in its partial.
	var size int64
	ok := waitFor(2*time.Minute, func() bool {
		fi, err := os.Stat(partial)
		if err != nil {
			return false
		}
		size = fi.Size()
		return bad.BlobBytes.Load() == hold && size >= kept
	})
	c.Assert(ok, check.Equals, true, check.Commentf("proxy sent %d of %d, partial %d\n%s", bad.BlobBytes.Load(), hold, size, d.Log()))
	d.Kill()
	<-pulled
	bad.Release()
	b, err := os.ReadFile(partial)
	c.Assert(err, check.IsNil)
	c.Assert(len(b) >= kept && len(b) < len(layer.Data), check.Equals, true, check.Commentf("partial of %d bytes", len(b)))
	c.Assert(bytes.Equal(b, layer.Data[:len(b)]), check.Equals, false, check.Commentf("the kept bytes are the layer's"))

	d.Start(c, "--metrics-addr", "127.0.0.1:0")
	res := d.Wharf(c, "pull", honest.Host+"/mismatch/img:1")
	c.Assert(res.ExitCode, check.Equals, 0, check.Commentf("the honest pull failed on its first try: %s\n%s", res, d.Log()))

	// It resumed from the kept bytes, then asked for the whole layer.
	ranges := honest.Ranges()
	resumed := fmt.Sprintf("bytes=%d-", len(b))
	at := -1
	for i, rg := range ranges {
		if rg == resumed {
			at = i
			break
		}
	}
	c.Assert(at >= 0, check.Equals, true, check.Commentf("no GET resumed with %q: %q", resumed, ranges))
	c.Assert(len(ranges) > at+1 && ranges[at+1] == "", check.Equals, true, check.Commentf("no GET from byte 0 after the resume: %q", ranges))
	c.Assert(strings.Contains(d.Log(), "downloading it again from byte 0"), check.Equals, true, check.Commentf("%s", d.Log()))
	restarts := scrapeURL(c, lastMetricsURL(c, d)).value(c, "wharf_partial_restarts_total", nil)
	c.Assert(restarts, check.Equals, float64(1))
	c.Logf("kept %d wrong bytes; the honest pull asked %q and downloaded %d bytes for a layer of %d; restarts %v",
		len(b), ranges, honest.BlobBytes.Load(), len(layer.Data), restarts)

	c.Assert(partialBytes(d), check.Equals, int64(0))
	c.Assert(imageIDOf(c, d, honest.Host+"/mismatch/img:1"), check.Equals, img.ID())
	assertStoreClean(c, d, "after the honest pull")
}

// imageIDOf is the ID d has for ref.
func imageIDOf(c *check.C, d *Daemon, ref string) string {
	return (&ResumeSuite{}).imageIDOn(c, d, ref)
}
