package integration

import (
	"net/http"
	"time"

	"github.com/wharfproject/wharf/internal/testregistry"
	check "gopkg.in/check.v1"
)

// registryLatency is server-side time per request of a registry behind
// object storage or an authenticating proxy: longer than a loopback scheme
// probe by far, shorter than any timeout.
const registryLatency = 60 * time.Millisecond

// A cold remote inspect of an insecure host costs ≤ 3 requests (token,
// GET /v2/, GET manifest) because the challenge comes from the ping sent
// beside the scheme probe. That must hold when the registry takes longer to
// answer the ping than the probe takes to learn the scheme: a ping given
// up on sends the manifest GET anonymously, a 401 and a fourth request.
func (s *ResolveSuite) TestColdBudgetHoldsOnASlowRegistry(c *check.C) {
	reg := s.regs.token
	single := pushImage(c, reg, "slow/single", "1.0", testregistry.ImageOptions{})
	d := StartDaemon(c) // cold: the scheme of reg is not known yet
	defer d.Stop(c)

	reg.Counter.SetBefore(func(*http.Request) { time.Sleep(registryLatency) })
	defer reg.Counter.SetBefore(nil)
	reg.ResetCounters()
	r := rsRaw(c, d, reg.Host+"/slow/single:1.0", auth(reg))
	log := reg.RequestLog()
	manifestGETs := reg.Counter.Count("GET manifests")
	checkRaw(c, reg, r, "slow/single", "1.0", single.Manifest)
	c.Check(manifestGETs, check.Equals, 1, check.Commentf("the manifest went without a token first: %v", log))
	c.Check(len(log) <= 3, check.Equals, true, check.Commentf("cold --raw on a slow registry made %d requests: %v", len(log), log))
}
