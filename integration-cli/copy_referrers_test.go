package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// CopyReferrersSuite: `wharf copy --with-referrers` (with-referrers=1)
// takes along what refers to the image. Between two distribution
// registries (v3.1: no referrers API) the referrers tag schema and
// cosign's tags are what carry them; between two go-containerregistry
// registries (with the API) the destination indexes them itself.
type CopyReferrersSuite struct {
	suiteFixture
	src, dst     *testregistry.Registry
	rrSrc, rrDst *testregistry.ReferrersRegistry
	d            *Daemon
}

func TestCopyReferrersSuite(t *testing.T) { t.Parallel(); runSuite(t, &CopyReferrersSuite{}) }

func (s *CopyReferrersSuite) SetUpSuite(c *check.C) {
	s.src = s.startRegistry(c, testregistry.Options{})
	s.dst = s.startRegistry(c, testregistry.Options{})
	s.rrSrc = s.startReferrersRegistry(c)
	s.rrDst = s.startReferrersRegistry(c)
	s.d = s.startDaemon(c)
}

// copy runs POST /wharf/images/copy (anonymous registries).
func (s *CopyReferrersSuite) copy(c *check.C, src, dst string, extra ...string) StreamLines {
	q := url.Values{"src": {src}, "dst": {dst}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	r := s.d.Req(c, http.MethodPost, "/v1.50/wharf/images/copy?"+q.Encode(), nil)
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	return r.Lines(c)
}

// referrersAPI asks a registry's referrers API directly.
func referrersAPI(c *check.C, base, repo, subject string) map[string]ocispec.Descriptor {
	resp, err := http.Get(base + "/v2/" + repo + "/referrers/" + subject)
	c.Assert(err, check.IsNil)
	defer resp.Body.Close()
	c.Assert(resp.StatusCode, check.Equals, http.StatusOK)
	var idx ocispec.Index
	c.Assert(json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&idx), check.IsNil)
	out := map[string]ocispec.Descriptor{}
	for _, d := range idx.Manifests {
		out[d.Digest.String()] = d
	}
	return out
}

func manifestOn(ctx context.Context, base, repo, ref string) (int, []byte) {
	cl := &testregistry.Client{Base: base}
	b, _, _, err := cl.GetManifest(ctx, repo, ref)
	if err != nil {
		return http.StatusNotFound, nil
	}
	return http.StatusOK, b
}

// Distribution to distribution: a signature listed in the tag schema's
// index and a cosign .sig tag arrive with their digests, the index at dst
// lists the signature with its artifactType and annotations, and nothing
// of them is copied without the flag. Copying again rewrites no index.
func (s *CopyReferrersSuite) TestCopyReferrersTagSchemaAndCosign(c *check.C) {
	ctx, cancel := fixtureCtx()
	defer cancel()
	img := pushImage(c, s.src, "refs/app", "1", testregistry.ImageOptions{})
	sbom := artifact(c, testregistry.ArtifactOptions{ArtifactType: "application/spdx+json", Subject: subjectOf(img), Data: []byte(`{"spdx":"copy"}`),
		Annotations: map[string]string{ocispec.AnnotationCreated: "2025-02-03T04:05:06Z", "org.example.kind": "sbom"}})
	idx, err := testregistry.NewReferrersIndex(sbom)
	c.Assert(err, check.IsNil)
	cl := s.src.Client()
	schemaTag := testregistry.TagSchemaTag(digest.Digest(img.Manifest.Digest))
	c.Assert(cl.PushArtifact(ctx, "refs/app", "", sbom), check.IsNil)
	c.Assert(cl.PutManifest(ctx, "refs/app", schemaTag, idx), check.IsNil)
	sig, err := testregistry.NewCosignSignature(digest.Digest(img.Manifest.Digest))
	c.Assert(err, check.IsNil)
	c.Assert(cl.PushArtifact(ctx, "refs/app", schemaTag+".sig", sig), check.IsNil)

	srcRefs := byDigest(*inspectReferrersOn(c, s.d, s.src.Host+"/refs/app:1", "", "").Referrers)
	c.Assert(srcRefs, check.HasLen, 2, check.Commentf("%+v", srcRefs))

	// Without the flag: the image only.
	s.d.WharfOK(c, "copy", s.src.Host+"/refs/app:1", s.dst.Host+"/refs/plain:1")
	c.Assert(*inspectReferrersOn(c, s.d, s.dst.Host+"/refs/plain:1", "", "").Referrers, check.HasLen, 0)
	c.Assert(dstDigest(c, s.dst, "refs/plain", schemaTag), check.Equals, "")
	c.Assert(dstDigest(c, s.dst, "refs/plain", schemaTag+".sig"), check.Equals, "")

	s.dst.ResetCounters()
	out := s.d.WharfOK(c, "copy", "--with-referrers", s.src.Host+"/refs/app:1", s.dst.Host+"/refs/app:1")
	c.Logf("dst requests: %s", s.dst.Counter.Summary())
	c.Assert(out.Stdout, check.Matches, `(?s).*Copied 2 referrers.*`)
	// The image, the signature by digest, the tag-schema index, the cosign tag.
	c.Check(s.dst.Counter.Count("PUT manifests"), check.Equals, 4, check.Commentf("%v", s.dst.RequestLog()))
	// dst's lack of the API was learnt by the inspect above.
	c.Check(s.dst.Counter.Count("GET referrers"), check.Equals, 0, check.Commentf("%v", s.dst.RequestLog()))

	dstRefs := byDigest(*inspectReferrersOn(c, s.d, s.dst.Host+"/refs/app:1", "", "").Referrers)
	c.Assert(dstRefs, check.HasLen, len(srcRefs), check.Commentf("%+v", dstRefs))
	for d, r := range srcRefs {
		got, ok := dstRefs[d]
		c.Assert(ok, check.Equals, true, check.Commentf("%s (%s) missing at dst: %+v", d, r.Source, dstRefs))
		c.Check(got.Source, check.Equals, r.Source)
		c.Check(got.Subject, check.Equals, img.Manifest.Digest)
		c.Check(got.ArtifactType, check.Equals, r.ArtifactType)
	}
	c.Check(dstRefs[sbom.Manifest.Digest].Annotations["org.example.kind"], check.Equals, "sbom")
	c.Check(dstDigest(c, s.dst, "refs/app", schemaTag+".sig"), check.Equals, sig.Manifest.Digest)
	for _, b := range append(sbom.Blobs, sig.Blobs...) {
		c.Check(hasBlob(c, s.dst, "refs/app", b.Digest), check.Equals, true)
	}

	// Again: everything is there; the index already lists the signature
	// and is not rewritten.
	s.dst.ResetCounters()
	s.d.WharfOK(c, "copy", "--with-referrers", s.src.Host+"/refs/app:1", s.dst.Host+"/refs/app:1")
	c.Check(s.dst.Counter.Count("PUT manifests"), check.Equals, 3, check.Commentf("%v", s.dst.RequestLog()))
	c.Check(s.dst.Counter.Count("PUT uploads"), check.Equals, 0, check.Commentf("%v", s.dst.RequestLog()))
	c.Check(*inspectReferrersOn(c, s.d, s.dst.Host+"/refs/app:1", "", "").Referrers, check.HasLen, 2)
}

// With the API on both sides: referrers of the index and of a platform
// manifest are copied, dst's API lists them (the registry indexed them;
// no tag-schema index is written), and a one-platform copy takes that
// platform's referrers only.
func (s *CopyReferrersSuite) TestCopyReferrersThroughTheAPI(c *check.C) {
	ctx, cancel := fixtureCtx()
	defer cancel()
	cl := s.rrSrc.Client()
	ix, err := testregistry.NewIndex(testregistry.IndexOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(cl.PushIndex(ctx, "api/multi", "1", ix), check.IsNil)
	ixDesc := ix.Index.Descriptor()
	sigTop := artifact(c, testregistry.ArtifactOptions{ArtifactType: "application/vnd.example.signature", Subject: &ixDesc, Data: []byte("index sig")})
	arm := ix.Images[1]
	sbomArm := artifact(c, testregistry.ArtifactOptions{ArtifactType: "application/vnd.example.sbom+json", Subject: subjectOf(arm), Data: []byte(`{"arm":1}`),
		Annotations: map[string]string{"org.example.kind": "sbom"}})
	for _, a := range []*testregistry.Artifact{sigTop, sbomArm} {
		c.Assert(cl.PushArtifact(ctx, "api/multi", "", a), check.IsNil)
	}

	s.rrDst.Counter.Reset()
	lines := s.copy(c, s.rrSrc.Host+"/api/multi:1", s.rrDst.Host+"/api/multi:1", "with-referrers", "1")
	c.Logf("dst requests: %s", s.rrDst.Counter.Summary())
	c.Assert(lines.Err(), check.Equals, "")
	c.Check(auxInt(lines.Aux(), "Referrers"), check.Equals, 2)
	c.Check(lines.Has("listed by the destination's referrers API"), check.Equals, true, check.Commentf("%v", lines.Texts()))
	// The index, 2 platform manifests, 2 referrers: no tag-schema index.
	c.Check(s.rrDst.Counter.Count("PUT manifests"), check.Equals, 5, check.Commentf("%v", s.rrDst.Counter.Requests()))

	top := referrersAPI(c, s.rrDst.URL, "api/multi", ix.Digest())
	c.Assert(top, check.HasLen, 1, check.Commentf("%+v", top))
	c.Check(top[sigTop.Manifest.Digest].ArtifactType, check.Equals, sigTop.ArtifactType)
	plat := referrersAPI(c, s.rrDst.URL, "api/multi", arm.Manifest.Digest)
	c.Assert(plat, check.HasLen, 1, check.Commentf("%+v", plat))
	c.Check(plat[sbomArm.Manifest.Digest].Annotations["org.example.kind"], check.Equals, "sbom")
	c.Check(referrersAPI(c, s.rrDst.URL, "api/multi", ix.Images[0].Manifest.Digest), check.HasLen, 0)
	for _, ref := range []string{testregistry.TagSchemaTag(digest.Digest(ix.Digest())), testregistry.TagSchemaTag(digest.Digest(arm.Manifest.Digest))} {
		st, _ := manifestOn(ctx, s.rrDst.URL, "api/multi", ref)
		c.Check(st, check.Equals, http.StatusNotFound, check.Commentf("tag-schema index %s written to a registry with the API", ref))
	}

	// One platform: its manifest is the top level at dst, and the index's
	// signature, whose subject dst does not hold, stays behind.
	lines = s.copy(c, s.rrSrc.Host+"/api/multi:1", s.rrDst.Host+"/api/arm:1", "with-referrers", "1", "platform", "linux/arm64/v8")
	c.Assert(lines.Err(), check.Equals, "")
	c.Check(auxInt(lines.Aux(), "Referrers"), check.Equals, 1)
	plat = referrersAPI(c, s.rrDst.URL, "api/arm", arm.Manifest.Digest)
	c.Check(plat, check.HasLen, 1, check.Commentf("%+v", plat))
	_, ok := plat[sbomArm.Manifest.Digest]
	c.Check(ok, check.Equals, true)
}

// A referrer that cannot be copied (src lists it but lacks its layer)
// fails the copy after the image, and the error says the image is there.
func (s *CopyReferrersSuite) TestCopyReferrerFailureAfterImage(c *check.C) {
	ctx, cancel := fixtureCtx()
	defer cancel()
	cl := s.rrSrc.Client()
	img, err := testregistry.NewImage(testregistry.ImageOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(cl.PushImage(ctx, "broken/app", "1", img), check.IsNil)
	bad := artifact(c, testregistry.ArtifactOptions{ArtifactType: "application/vnd.example.signature", Subject: subjectOf(img), Data: []byte("never uploaded")})
	c.Assert(cl.PutBlob(ctx, "broken/app", bad.Blobs[0]), check.IsNil)
	c.Assert(cl.PutManifest(ctx, "broken/app", bad.Manifest.Digest, bad.Manifest), check.IsNil)

	lines := s.copy(c, s.rrSrc.Host+"/broken/app:1", s.rrDst.Host+"/broken/app:1", "with-referrers", "1")
	c.Assert(lines.Err(), check.Matches, `the image was copied to `+s.rrDst.Host+`/broken/app:1@`+img.Manifest.Digest+`, but not its referrers: .*`+bad.Blobs[1].Digest+`.*`)
	st, _ := manifestOn(ctx, s.rrDst.URL, "broken/app", "1")
	c.Check(st, check.Equals, http.StatusOK)
	c.Check(referrersAPI(c, s.rrDst.URL, "broken/app", img.Manifest.Digest), check.HasLen, 0)
	c.Check(strings.Contains(lines.Err(), "panic"), check.Equals, false)
}
