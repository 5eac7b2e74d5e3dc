package integration

import (
	"path/filepath"
	"strings"

	"gopkg.in/check.v1"
)

// copy --with-referrers carries the signatures, and DST's scope judges
// them there: a cosign bundle by its digest (accepted in the new
// repository), a legacy signature by the reference it names (the default
// matchRepository of this scope refuses signed/legacy's signature in
// signed/moved-legacy). The verdict is in the copy's result.
func (s *CosignTrustSuite) TestCopyCarriesSignaturesAndDSTJudgesThem(c *check.C) {
	s.sign(c, "signed/src-bundle", "signer", true)
	s.sign(c, "signed/src-legacy", "signer", false)
	for _, tc := range []struct{ src, dst, decision string }{
		{"signed/src-bundle", "signed/moved-bundle", "accepted"},
		{"signed/src-legacy", "signed/moved-legacy", "rejected"},
	} {
		r := s.d.WharfOK(c, "copy", "--with-referrers", s.reg.Host+"/"+tc.src+":1", s.reg.Host+"/"+tc.dst+":1")
		c.Check(r.Stdout, check.Matches, `(?s).*Signature policy at `+s.reg.Host+`/`+tc.dst+`: `+tc.decision+` .*`, check.Commentf("%s", r))
		a := s.inspect(c, s.reg.Host+"/"+tc.dst+":1")
		c.Check(a.Trust.Decision, check.Equals, tc.decision, check.Commentf("%s: %+v", tc.dst, a.Trust))
		if tc.decision == "rejected" {
			var errs []string
			for _, sig := range a.Trust.Signatures {
				errs = append(errs, sig.Error)
			}
			c.Check(strings.Join(errs, "; "), check.Matches, `.*src-legacy.*`, check.Commentf("%+v", a.Trust))
		}
	}
	// The summary carries both verdicts.
	r := s.d.WharfOK(c, "copy", "--with-referrers", s.reg.Host+"/signed/src-bundle:1", s.reg.Host+"/signed/moved-again:1")
	c.Check(r.Stdout, check.Matches, `(?s).*Signature policy at the source: accepted \(scope "`+s.reg.Host+`/signed", sigstoreSigned\)\nSignature policy at the destination: accepted .*`)
}

// A legacy .sig manifest holds one layer per signature: signed first by
// another key and then by the policy's, the image is accepted. Before, the
// policy kept one signature per manifest digest and judged only the first.
func (s *CosignTrustSuite) TestLegacySignatureManifestWithTwoSignatures(c *check.C) {
	img := s.sign(c, "signed/twice", "other", false)
	s.run(c, "sign", "--key", filepath.Join(s.keys, "signer.key"), "--tlog-upload=false", "--use-signing-config=false",
		"--allow-insecure-registry", "--allow-http-registry", "--new-bundle-format=false",
		s.reg.Host+"/signed/twice@"+img.Manifest.Digest)
	a := s.inspect(c, s.reg.Host+"/signed/twice:1")
	c.Check(a.Trust.Decision, check.Equals, "accepted", check.Commentf("%+v", a.Trust))
	c.Check(a.Trust.Signatures, check.HasLen, 2, check.Commentf("%+v", a.Trust))
}
