package integration

import (
	"encoding/json"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// wharf diff's signer section under a sigstoreSigned policy: an image
// signed by the policy's key against itself has one signer, the same on
// both sides; against an unsigned image of the same scope, the verdicts
// and signers differ, and --exit-code says so.
func (s *CosignTrustSuite) TestDiffSignerSection(c *check.C) {
	s.sign(c, "signed/diffed", "signer", true)
	pushImage(c, s.reg, "signed/diffplain", "1", testregistry.ImageOptions{})
	signed, plain := s.reg.Host+"/signed/diffed:1", s.reg.Host+"/signed/diffplain:1"

	diff := func(a, b string) types.ImageDiff {
		r := s.d.Wharf(c, "diff", "--remote", "--sections", "signer", "--format", "json", a, b)
		c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
		var d types.ImageDiff
		c.Assert(json.Unmarshal([]byte(r.Stdout), &d), check.IsNil, check.Commentf("%s", r.Stdout))
		c.Assert(d.Signer, check.NotNil, check.Commentf("%s", r.Stdout))
		return d
	}
	d := diff(signed, signed)
	c.Assert(d.Signer.From.Decision, check.Equals, "accepted")
	c.Assert(d.Signer.FromIdentity, check.Matches, `SHA256:.+`)
	c.Assert(d.Signer.ToIdentity, check.Equals, d.Signer.FromIdentity)
	c.Assert(d.Signer.Same, check.Equals, true)
	c.Assert(d.Differs(), check.Equals, false)

	d = diff(signed, plain)
	c.Assert(d.Signer.To.Decision, check.Equals, "rejected")
	c.Assert(d.Signer.ToIdentity, check.Equals, "")
	c.Assert(d.Signer.Same, check.Equals, false)
	r := s.d.Wharf(c, "diff", "--remote", "--sections", "signer", "--exit-code", signed, plain)
	c.Assert(r.ExitCode, check.Equals, 1, check.Commentf("%s", r))
	c.Assert(r.Stdout, check.Matches, `(?s).*SIGNER\n  from: accepted, signed by SHA256:.*\n  to:   rejected, no verified signature\n~ another verdict or signer\n.*`)
}
