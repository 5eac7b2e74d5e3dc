package integration

import (
	"strings"

	"github.com/opencontainers/go-digest"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// A source that lists, as a referrer of image M, an artifact whose own
// subject is another image V (issue 20, red team finding 3): copying it
// would attach it to V at the destination (its PUT makes DST index it
// under V, or wharf adds it to V's tag-schema index), a fake SBOM or
// signature on an image the copy never touched. The copy fails loudly
// after the image, before any referrer is written, in the tag-schema
// listing and the cosign-tag path alike.
func (s *CopyReferrersSuite) TestCopyRefusesReferrerOfAnotherSubject(c *check.C) {
	ctx, cancel := fixtureCtx()
	defer cancel()
	cl := s.src.Client()
	for _, tc := range []struct {
		repo, how string
	}{{"lie/schema", "tag schema"}, {"lie/cosign", "cosign tag"}} {
		m := pushImage(c, s.src, tc.repo, "1", testregistry.ImageOptions{})
		v := pushImage(c, s.src, tc.repo, "2", testregistry.ImageOptions{})
		fake := artifact(c, testregistry.ArtifactOptions{ArtifactType: "application/spdx+json", Subject: subjectOf(v), Data: []byte(`{"fake":"` + tc.repo + `"}`)})
		mTag := testregistry.TagSchemaTag(digest.Digest(m.Manifest.Digest))
		vTag := testregistry.TagSchemaTag(digest.Digest(v.Manifest.Digest))
		switch tc.how {
		case "tag schema":
			c.Assert(cl.PushArtifact(ctx, tc.repo, "", fake), check.IsNil)
			idx, err := testregistry.NewReferrersIndex(fake)
			c.Assert(err, check.IsNil)
			c.Assert(cl.PutManifest(ctx, tc.repo, mTag, idx), check.IsNil)
		default:
			c.Assert(cl.PushArtifact(ctx, tc.repo, mTag+".sig", fake), check.IsNil)
		}

		res := s.d.Wharf(c, "copy", "--with-referrers", s.src.Host+"/"+tc.repo+":1", s.dst.Host+"/"+tc.repo+":1")
		all := res.Stdout + res.Stderr
		c.Logf("%s: %s", tc.how, res)
		c.Check(res.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s: %s", tc.how, res))
		c.Check(all, check.Matches, `(?s).*the image was copied to `+s.dst.Host+`/`+tc.repo+`:1@`+m.Manifest.Digest+`, but not its referrers: .*`+
			`referrer `+fake.Manifest.Digest+` listed for `+m.Manifest.Digest+` refers to `+v.Manifest.Digest+`.*`, check.Commentf("%s", tc.how))
		// Nothing of the artifact reached DST: not under V's tag-schema
		// index, not under M's cosign tag, not by digest.
		c.Check(dstDigest(c, s.dst, tc.repo, vTag), check.Equals, "", check.Commentf("%s: attached to V at dst", tc.how))
		c.Check(dstDigest(c, s.dst, tc.repo, mTag+".sig"), check.Equals, "", check.Commentf("%s", tc.how))
		c.Check(dstDigest(c, s.dst, tc.repo, mTag), check.Equals, "", check.Commentf("%s", tc.how))
		c.Check(dstDigest(c, s.dst, tc.repo, fake.Manifest.Digest), check.Equals, "", check.Commentf("%s", tc.how))
		c.Check(strings.Contains(all, "panic"), check.Equals, false)
	}
}
