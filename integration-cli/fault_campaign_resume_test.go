package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// The campaign's resume rounds: a seeded proxy draws, for each layer GET of
// a pull, FaultCorrupt (the body's bytes inverted up to a random point,
// then held: a hostile registry cut off mid-blob) among truncations,
// resets, 429s and 503s. Once a corrupt body's bytes are in the layer's
// partial, wharfd is killed and started again, the faults stop, and the
// same pull — now honest — must succeed on its first try with the pushed
// image, resuming onto the wrong bytes and starting that layer again from
// byte 0 (the log says so). A pull that ends before any corrupt body is
// held must have succeeded verified or failed naming the registry, and the
// honest pull after it must succeed too.
//
// campaignResumeSeeds each draw FaultCorrupt for a layer GET (checked: the
// round fails if none is held), and make test runs them beside the suite's
// own seed (WHARF_FAULT_SEED, else the clock), which may or may not. Seeds
// 1 and 2 hold a layer wrong from byte 0; 11, 19 and 27 hold one whose
// first bytes came honestly, then a truncation, then a corrupt Range GET
// (the partial right, then wrong). Each failed its honest pull before the
// store restarted a wrong resume from byte 0.
var campaignResumeSeeds = []uint64{1, 2, 11, 19, 27}

// campaignResumeOdds: truncations make some corrupt bodies land after
// honest bytes (a Range GET), so the partial is right, then wrong.
func campaignResumeOdds(layers map[string]bool) hostile.FaultOdds {
	return hostile.FaultOdds{
		Reset: 0.05, Truncate: 0.10, TooMany: 0.03, Unavailable: 0.03,
		Corrupt: 0.40,
		Corruptible: func(r *http.Request) bool {
			return layers[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]
		},
	}
}

func (s *FaultCampaignSuite) TestCorruptPartialsThenAnHonestPull(c *check.C) {
	seeds := append([]uint64{s.seed}, campaignResumeSeeds...)
	for i, seed := range seeds {
		held := s.resumeRound(c, seed, fmt.Sprintf("camp/resume%d", i))
		if i > 0 {
			c.Check(held, check.Equals, true, check.Commentf("seed %d held no corrupt body: the draws changed (replay: WHARF_FAULT_SEED=%d)", seed, seed))
		}
	}
}

// resumeRound is one seed's round; it reports whether a corrupt body was
// held with its bytes in a partial (and so resumed by the honest pull).
func (s *FaultCampaignSuite) resumeRound(c *check.C, seed uint64, repo string) bool {
	replay := fmt.Sprintf("seed %d (replay: WHARF_FAULT_SEED=%d)", seed, seed)
	img := pushImage(c, s.reg, repo, "1", testregistry.ImageOptions{Layers: 3, LayerSize: 512 << 10})
	layers := map[string]bool{}
	for _, l := range img.Layers {
		layers[l.Digest] = true
	}
	proxy, err := hostile.NewSeededFaultProxy(s.reg.DirectURL, seed, campaignResumeOdds(layers))
	c.Assert(err, check.IsNil)
	defer proxy.Close()
	defer proxy.Stop() // first: no body stays held into the proxy's close
	// The default body window (30 s): a held body stays held until wharfd
	// is killed, not given up on in the round.
	d := NewDaemon(c)
	d.Start(c)
	defer d.Kill()
	ref := proxy.Host + "/" + repo + ":1"

	ctx, cancel := context.WithTimeout(context.Background(), campaignOpTimeout)
	defer cancel()
	type pullResult struct {
		out []byte
		err error
	}
	done := make(chan pullResult, 1)
	go func() {
		cmd := exec.CommandContext(ctx, bins.Wharf, "-H", d.Host, "pull", ref)
		cmd.Env = append(os.Environ(), d.cliEnv()...)
		out, err := cmd.CombinedOutput()
		done <- pullResult{out, err}
	}()
	partialOf := func(path string) string {
		dg, err := digest.Parse(path[strings.LastIndex(path, "/")+1:])
		if err != nil {
			return ""
		}
		return filepath.Join(d.Root, "partial", string(dg.Algorithm()), dg.Encoded())
	}
	var (
		res    *pullResult
		wrong  hostile.CorruptStall
		inPart bool
	)
	ok := waitFor(campaignOpTimeout, func() bool {
		select {
		case r := <-done:
			res = &r
			return true
		default:
		}
		for _, st := range proxy.CorruptStalls() {
			if fi, err := os.Stat(partialOf(st.Path)); err == nil && fi.Size() >= st.End {
				wrong, inPart = st, true
				return true
			}
		}
		return false
	})
	c.Assert(ok, check.Equals, true, check.Commentf("%s: the pull neither ended nor wrote a corrupt body within %s; stalls %v\n%s",
		replay, campaignOpTimeout, proxy.CorruptStalls(), d.Log()))

	if inPart {
		d.Kill()
		cancel()
		<-done
		proxy.Stop()
		proxy.CloseClientConnections()
		d.Start(c)
		p := partialOf(wrong.Path)
		b, err := os.ReadFile(p)
		c.Assert(err, check.IsNil, check.Commentf("%s: the partial of %s after the restart", replay, wrong.Path))
		c.Logf("%s: killed with %s's partial holding %d bytes, bytes [%d, %d) inverted; faults %v",
			replay, wrong.Path, len(b), wrong.From, wrong.End, proxy.Injected())
	} else {
		proxy.Stop()
		proxy.CloseClientConnections()
		if res.err == nil {
			c.Check(imageIDOf(c, d, ref), check.Equals, img.ID(), check.Commentf("%s: the faulted pull succeeded with wrong content", replay))
		} else {
			var ee *exec.ExitError
			c.Assert(errors.As(res.err, &ee), check.Equals, true, check.Commentf("%s: %v", replay, res.err))
			c.Check(bytes.Contains(res.out, []byte(proxy.Host)), check.Equals, true,
				check.Commentf("%s: the faulted pull failed without naming the registry\n%s", replay, res.out))
		}
		c.Logf("%s: the faulted pull ended (%v) before any corrupt body was held; faults %v", replay, res.err, proxy.Injected())
	}

	// Honest now: the pull succeeds on its first try.
	r := d.Wharf(c, "pull", ref)
	if r.ExitCode != 0 {
		// The other seeds still run: each says for itself.
		c.Errorf("%s: the honest pull failed\n%s\n%s", replay, r, d.Log())
		return inPart
	}
	c.Check(imageIDOf(c, d, ref), check.Equals, img.ID(), check.Commentf("%s", replay))
	if inPart {
		c.Check(strings.Contains(d.Log(), "downloading it again from byte 0"), check.Equals, true,
			check.Commentf("%s: no restart from byte 0 in the log\n%s", replay, d.Log()))
	}
	c.Check(partialBytes(d), check.Equals, int64(0), check.Commentf("%s", replay))
	assertStoreClean(c, d, replay)
	return inPart
}
