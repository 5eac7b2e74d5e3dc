package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
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

// The same through the referrers API: a proxy in front of a real OCI 1.1
// registry answers M's referrers with an artifact whose subject is V (the
// registry itself lists it under V only). The copy fails before any
// referrer is written; DST lists nothing under V.
func (s *CopyReferrersSuite) TestCopyRefusesAPIReferrerOfAnotherSubject(c *check.C) {
	ctx, cancel := fixtureCtx()
	defer cancel()
	cl := s.rrSrc.Client()
	const repo = "lie/api"
	m, err := testregistry.NewImage(testregistry.ImageOptions{})
	c.Assert(err, check.IsNil)
	v, err := testregistry.NewImage(testregistry.ImageOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(cl.PushImage(ctx, repo, "1", m), check.IsNil)
	c.Assert(cl.PushImage(ctx, repo, "2", v), check.IsNil)
	fake := artifact(c, testregistry.ArtifactOptions{ArtifactType: "application/vnd.example.signature", Subject: subjectOf(v), Data: []byte("fake signature")})
	c.Assert(cl.PushArtifact(ctx, repo, "", fake), check.IsNil)
	lie, err := testregistry.NewReferrersIndex(fake)
	c.Assert(err, check.IsNil)

	proxy, err := hostile.NewRewriteProxy(s.rrSrc.URL, func(resp *http.Response) error {
		if resp.Request.Method != http.MethodGet || resp.Request.URL.Path != "/v2/"+repo+"/referrers/"+m.Manifest.Digest {
			return nil
		}
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(lie.Data))
		resp.ContentLength = int64(len(lie.Data))
		resp.Header.Set("Content-Length", fmt.Sprint(len(lie.Data)))
		resp.Header.Set("Content-Type", ocispec.MediaTypeImageIndex)
		return nil
	})
	c.Assert(err, check.IsNil)
	defer proxy.Close()

	res := s.d.Wharf(c, "copy", "--with-referrers", proxy.Host+"/"+repo+":1", s.rrDst.Host+"/"+repo+":1")
	all := res.Stdout + res.Stderr
	c.Logf("%s", res)
	c.Check(res.ExitCode, check.Not(check.Equals), 0)
	c.Check(all, check.Matches, `(?s).*the image was copied to `+s.rrDst.Host+`/`+repo+`:1@`+m.Manifest.Digest+`, but not its referrers: .*`+
		`registry `+proxy.Host+`: referrer `+fake.Manifest.Digest+` listed for `+m.Manifest.Digest+` refers to `+v.Manifest.Digest+`.*`)
	c.Check(referrersAPI(c, s.rrDst.URL, repo, v.Manifest.Digest), check.HasLen, 0)
	c.Check(referrersAPI(c, s.rrDst.URL, repo, m.Manifest.Digest), check.HasLen, 0)
	st, _ := manifestOn(ctx, s.rrDst.URL, repo, fake.Manifest.Digest)
	c.Check(st, check.Equals, http.StatusNotFound)
}
