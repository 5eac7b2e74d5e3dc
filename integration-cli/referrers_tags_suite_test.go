package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// ReferrersTagsSuite: what refers to an image (GET /images/NAME/json?
// remote=1&referrers=1, wharf inspect --remote --referrers) and the tags of
// a repository (GET /wharf/images/NAME/tags, wharf tags), with their
// request budgets at counting proxies.
//
// The distribution registry (v3.1) has no referrers API: it answers
// /v2/<name>/referrers/<digest> with 404, so it is the registry without
// the API (tag-schema fallback, token auth). The API is exercised against
// go-containerregistry's registry, which serves it.
type ReferrersTagsSuite struct {
	suiteFixture
	token *testregistry.Registry
	rr    *testregistry.ReferrersRegistry
	d     *Daemon
}

func TestReferrersTagsSuite(t *testing.T) { t.Parallel(); runSuite(t, &ReferrersTagsSuite{}) }

func (s *ReferrersTagsSuite) SetUpSuite(c *check.C) {
	s.token = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken})
	s.rr = s.startReferrersRegistry(c)
	s.d = s.startDaemon(c)
}

// inspectReferrers is a remote inspect with referrers=1 (and extra query).
func (s *ReferrersTagsSuite) inspectReferrers(c *check.C, name, authHdr, extra string) types.RemoteImageInspect {
	return inspectReferrersOn(c, s.d, name, authHdr, extra)
}

func inspectReferrersOn(c *check.C, d *Daemon, name, authHdr, extra string) types.RemoteImageInspect {
	path := "/v1.50/images/" + name + "/json?remote=1&referrers=1"
	if extra != "" {
		path += "&" + extra
	}
	var hdr []string
	if authHdr != "" {
		hdr = []string{"X-Registry-Auth", authHdr}
	}
	r := d.Get(c, path, hdr...)
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: %s\n%s", path, r, logTail(d)))
	var v types.RemoteImageInspect
	r.JSON(c, &v)
	c.Assert(v.Referrers, check.NotNil, check.Commentf("referrers=1 must answer a list: %s", r.Body))
	return v
}

func artifact(c *check.C, opts testregistry.ArtifactOptions) *testregistry.Artifact {
	a, err := testregistry.NewArtifact(opts)
	c.Assert(err, check.IsNil)
	return a
}

func subjectOf(img *testregistry.Image) *ocispec.Descriptor {
	d := img.Manifest.Descriptor()
	return &d
}

// byDigest indexes referrers by digest.
func byDigest(refs types.Referrers) map[string]types.Referrer {
	m := map[string]types.Referrer{}
	for _, r := range refs {
		m[r.Digest] = r
	}
	return m
}

func (s *ReferrersTagsSuite) TestReferrersThroughTheReferrersAPI(c *check.C) {
	ctx, cancel := fixtureCtx()
	defer cancel()
	cl := s.rr.Client()
	img, err := testregistry.NewImage(testregistry.ImageOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(cl.PushImage(ctx, "api/app", "1.0", img), check.IsNil)
	sbom := artifact(c, testregistry.ArtifactOptions{ArtifactType: "application/vnd.example.sbom+json", Subject: subjectOf(img), Data: []byte(`{"sbom":1}`),
		Annotations: map[string]string{ocispec.AnnotationCreated: "2025-06-01T10:20:30Z", "org.example.kind": "sbom"}})
	sig := artifact(c, testregistry.ArtifactOptions{ArtifactType: "application/vnd.example.signature", Subject: subjectOf(img), Data: []byte("sig")})
	for _, a := range []*testregistry.Artifact{sbom, sig} {
		c.Assert(cl.PushArtifact(ctx, "api/app", "", a), check.IsNil)
	}
	name := s.rr.Host + "/api/app:1.0"

	s.rr.Counter.Reset()
	v := s.inspectReferrers(c, name, "", "")
	c.Logf("requests: %v", s.rr.Counter.Requests())
	c.Assert(v.Referrers, check.NotNil)
	got := byDigest(*v.Referrers)
	c.Assert(got, check.HasLen, 2, check.Commentf("%+v", *v.Referrers))
	for _, a := range []*testregistry.Artifact{sbom, sig} {
		r, ok := got[a.Manifest.Digest]
		c.Assert(ok, check.Equals, true, check.Commentf("%s missing from %+v", a.ArtifactType, *v.Referrers))
		c.Check(r.Source, check.Equals, "referrers-api")
		c.Check(r.Subject, check.Equals, img.Manifest.Digest)
		c.Check(r.MediaType, check.Equals, ocispec.MediaTypeImageManifest)
		c.Check(r.ArtifactType, check.Equals, a.ArtifactType)
		c.Check(r.Size, check.Equals, int64(len(a.Manifest.Data)))
	}
	c.Check(got[sbom.Manifest.Digest].Created, check.Equals, "2025-06-01T10:20:30Z")
	c.Check(got[sbom.Manifest.Digest].Annotations["org.example.kind"], check.Equals, "sbom")
	c.Check(got[sig.Manifest.Digest].Created, check.Equals, "")
	// One page of the API and one GET per cosign tag (none: 404), beside
	// what the inspect itself costs.
	c.Check(s.rr.Counter.Count("GET referrers"), check.Equals, 1, check.Commentf("%v", s.rr.Counter.Requests()))
	cosign := 0
	for _, r := range s.rr.Counter.Requests() {
		if strings.Contains(r, "/manifests/sha256-") {
			cosign++
		}
	}
	c.Check(cosign, check.Equals, 3, check.Commentf("%v", s.rr.Counter.Requests()))

	// artifactType: this registry ignores the filter and says so (no
	// OCI-Filters-Applied): the daemon filters.
	v = s.inspectReferrers(c, name, "", "artifactType="+url.QueryEscape("application/vnd.example.sbom+json"))
	c.Assert(*v.Referrers, check.HasLen, 1, check.Commentf("%+v", *v.Referrers))
	c.Check((*v.Referrers)[0].Digest, check.Equals, sbom.Manifest.Digest)

	// The CLI asks the same.
	out := s.d.WharfOK(c, "inspect", "--remote", "--referrers", "--artifact-type", "application/vnd.example.signature",
		"-f", "{{range .Referrers}}{{.Source}} {{.Digest}}{{end}}", name)
	c.Check(strings.TrimSpace(out.Stdout), check.Equals, "referrers-api "+sig.Manifest.Digest)
	bad := s.d.Wharf(c, "inspect", "--referrers", name)
	c.Check(bad.ExitCode, check.Not(check.Equals), 0)
	c.Check(bad.Stderr, check.Matches, `(?s).*--referrers requires --remote.*`)
}

func (s *ReferrersTagsSuite) TestReferrersThroughTheTagSchemaOnTokenRegistry(c *check.C) {
	reg := s.token
	img := pushImage(c, reg, "fallback/app", "1.0", testregistry.ImageOptions{})
	sbom := artifact(c, testregistry.ArtifactOptions{ArtifactType: "application/spdx+json", Subject: subjectOf(img), Data: []byte(`{"spdx":1}`),
		Annotations: map[string]string{ocispec.AnnotationCreated: "2025-02-03T04:05:06Z"}})
	idx, err := testregistry.NewReferrersIndex(sbom)
	c.Assert(err, check.IsNil)
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(reg.Client().PushArtifact(ctx, "fallback/app", "", sbom), check.IsNil)
	c.Assert(reg.Client().PutManifest(ctx, "fallback/app", testregistry.TagSchemaTag(digest.Digest(img.Manifest.Digest)), idx), check.IsNil)
	name := reg.Host + "/fallback/app:1.0"
	a := auth(reg)
	// A new daemon: it has not yet learnt that this registry lacks the API.
	d := StartDaemon(c)
	defer d.Stop(c)

	reg.ResetCounters()
	v := inspectReferrersOn(c, d, name, a, "")
	c.Logf("requests: %v", reg.RequestLog())
	c.Assert(*v.Referrers, check.HasLen, 1, check.Commentf("%+v", *v.Referrers))
	r := (*v.Referrers)[0]
	c.Check(r.Source, check.Equals, "referrers-tag")
	c.Check(r.Digest, check.Equals, sbom.Manifest.Digest)
	c.Check(r.ArtifactType, check.Equals, "application/spdx+json")
	c.Check(r.Created, check.Equals, "2025-02-03T04:05:06Z")
	c.Check(r.Subject, check.Equals, img.Manifest.Digest)
	c.Check(reg.Counter.Count("GET referrers"), check.Equals, 1, check.Commentf("the API is asked once: %v", reg.RequestLog()))

	// The registry's answer (404: no API) is remembered: the next inspect
	// goes to the tag schema directly.
	reg.ResetCounters()
	v = inspectReferrersOn(c, d, name, a, "")
	c.Check(*v.Referrers, check.HasLen, 1)
	c.Check(reg.Counter.Count("GET referrers"), check.Equals, 0, check.Commentf("%v", reg.RequestLog()))
	// HEAD of the tag, then the tag-schema index and three cosign tags.
	c.Check(reg.Counter.Total(), check.Equals, 5, check.Commentf("%v", reg.RequestLog()))

	// A filter that matches nothing: an empty list, not an absent one.
	v = inspectReferrersOn(c, d, name, a, "artifactType=application%2Fnone")
	c.Check(*v.Referrers, check.HasLen, 0)
}

func (s *ReferrersTagsSuite) TestCosignSignatureTag(c *check.C) {
	reg := s.token
	img := pushImage(c, reg, "cosign/app", "1.0", testregistry.ImageOptions{})
	sig, err := testregistry.NewCosignSignature(digest.Digest(img.Manifest.Digest))
	c.Assert(err, check.IsNil)
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(reg.Client().PushArtifact(ctx, "cosign/app", testregistry.TagSchemaTag(digest.Digest(img.Manifest.Digest))+".sig", sig), check.IsNil)

	v := s.inspectReferrers(c, reg.Host+"/cosign/app:1.0", auth(reg), "")
	c.Assert(*v.Referrers, check.HasLen, 1, check.Commentf("%+v", *v.Referrers))
	r := (*v.Referrers)[0]
	c.Check(r.Source, check.Equals, "cosign")
	c.Check(r.Digest, check.Equals, sig.Manifest.Digest)
	c.Check(r.MediaType, check.Equals, ocispec.MediaTypeImageManifest)
	c.Check(r.ArtifactType, check.Equals, ocispec.MediaTypeImageConfig)
	c.Check(r.Size, check.Equals, int64(len(sig.Manifest.Data)))
	c.Check(r.Subject, check.Equals, img.Manifest.Digest)
}

func (s *ReferrersTagsSuite) TestAttestationsAttachToTheirPlatform(c *check.C) {
	reg := s.token
	ix := pushIndex(c, reg, "attest/app", "1.0", testregistry.IndexOptions{Attestation: true})
	name := reg.Host + "/attest/app:1.0"
	amd := platformQuery(ocispec.Platform{OS: "linux", Architecture: "amd64"})
	arm := platformQuery(ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"})

	v := s.inspectReferrers(c, name, auth(reg), "platform="+amd)
	c.Assert(*v.Referrers, check.HasLen, 1, check.Commentf("%+v", *v.Referrers))
	r := (*v.Referrers)[0]
	c.Check(r.Source, check.Equals, "attestation")
	c.Check(r.Digest, check.Equals, ix.Attestation.Manifest.Digest)
	c.Check(r.Subject, check.Equals, ix.Images[0].Manifest.Digest)
	c.Check(r.Annotations["vnd.docker.reference.type"], check.Equals, "attestation-manifest")

	// The arm64 image has no attestation of its own.
	v = s.inspectReferrers(c, name, auth(reg), "platform="+arm)
	c.Check(*v.Referrers, check.HasLen, 0, check.Commentf("%+v", *v.Referrers))
}

// Without referrers (or with referrers=0) a remote inspect costs what it
// always did: a warm unchanged tag is one HEAD.
func (s *ReferrersTagsSuite) TestReferrersZeroCostsNothing(c *check.C) {
	reg := s.token
	pushImage(c, reg, "budget/refs", "1.0", testregistry.ImageOptions{})
	name := reg.Host + "/budget/refs:1.0"
	a := auth(reg)
	ri := &RemoteInspectSuite{}
	ri.remoteOK(c, s.d, name, a, "") // warm the caches

	for _, extra := range []string{"", "referrers=0"} {
		reg.ResetCounters()
		m := ri.remoteOK(c, s.d, name, a, extra)
		c.Check(reg.RequestLog(), check.DeepEquals, []string{"HEAD /v2/budget/refs/manifests/1.0"}, check.Commentf("extra %q", extra))
		_, has := m["Referrers"]
		c.Check(has, check.Equals, false, check.Commentf("extra %q", extra))
	}
}

// tagsOK is GET /wharf/images/NAME/tags?query with X-Registry-Auth.
func (s *ReferrersTagsSuite) tags(c *check.C, name, authHdr, query string) Response {
	path := "/v1.50/wharf/images/" + name + "/tags"
	if query != "" {
		path += "?" + query
	}
	var hdr []string
	if authHdr != "" {
		hdr = []string{"X-Registry-Auth", authHdr}
	}
	return s.d.Get(c, path, hdr...)
}

func (s *ReferrersTagsSuite) TestTagsAcrossPages(c *check.C) {
	reg := s.token
	img, err := testregistry.NewImage(testregistry.ImageOptions{})
	c.Assert(err, check.IsNil)
	ctx, cancel := fixtureCtx()
	defer cancel()
	cl := reg.Client()
	c.Assert(cl.PushImage(ctx, "tags/app", "latest", img), check.IsNil)
	want := []string{"latest"}
	for i := range 24 {
		// 1.0.0 … 1.11.0 and v2.0.0-rc.1 … : lexical order is not semver order.
		t := fmt.Sprintf("1.%d.0", i)
		if i >= 12 {
			t = fmt.Sprintf("v2.0.0-rc.%d", i-12)
		}
		c.Assert(cl.PutManifest(ctx, "tags/app", t, img.Manifest), check.IsNil)
		want = append(want, t)
	}
	lexical := append([]string(nil), want...)
	sort.Strings(lexical)
	name := reg.Host + "/tags/app"
	a := auth(reg)

	// Pages of 4: 25 tags take 7 requests.
	reg.ResetCounters()
	r := s.tags(c, name, a, "page-size=4")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	var got types.RemoteTags
	r.JSON(c, &got)
	c.Check(got.Tags, check.DeepEquals, lexical)
	c.Check(got.Registry, check.Equals, reg.Host)
	c.Check(got.Name, check.Equals, name)
	c.Check(reg.Counter.Count("GET tags"), check.Equals, 7, check.Commentf("%v", reg.RequestLog()))

	// The CLI, with the user's stored credentials; the default page size
	// takes one request.
	login := s.d.WharfIn(c, []byte(reg.Password+"\n"), "login", reg.Host, "-u", reg.Username, "--password-stdin")
	c.Assert(login.ExitCode, check.Equals, 0, check.Commentf("%s", login))
	reg.ResetCounters()
	out := s.d.WharfOK(c, "tags", name)
	c.Check(strings.Split(strings.TrimSpace(out.Stdout), "\n"), check.DeepEquals, lexical)
	c.Check(reg.Counter.Count("GET tags"), check.Equals, 1, check.Commentf("%v", reg.RequestLog()))

	// --limit in the registry's order asks for no page beyond it.
	reg.ResetCounters()
	out = s.d.WharfOK(c, "tags", "--limit", "6", "--page-size", "4", name)
	c.Check(strings.Split(strings.TrimSpace(out.Stdout), "\n"), check.DeepEquals, lexical[:6])
	c.Check(reg.Counter.Count("GET tags"), check.Equals, 2, check.Commentf("%v", reg.RequestLog()))

	// semver: not-versions first, then ascending; --limit after sorting.
	out = s.d.WharfOK(c, "tags", "--sort", "semver", "--format", "json", name)
	var sorted []string
	c.Assert(json.Unmarshal([]byte(out.Stdout), &sorted), check.IsNil, check.Commentf("%s", out))
	c.Check(sorted[0], check.Equals, "latest")
	c.Check(sorted[1:13], check.DeepEquals, []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0", "1.7.0", "1.8.0", "1.9.0", "1.10.0", "1.11.0"})
	c.Check(sorted[13:16], check.DeepEquals, []string{"v2.0.0-rc.0", "v2.0.0-rc.1", "v2.0.0-rc.2"})
	c.Check(sorted[24], check.Equals, "v2.0.0-rc.11")
	out = s.d.WharfOK(c, "tags", "--sort", "semver", "--limit", "2", name)
	c.Check(out.Stdout, check.Equals, "latest\n1.0.0\n")

	// Without credentials the token registry refuses: 401, not an empty list.
	r = s.tags(c, name, "", "")
	c.Check(r.Status, check.Equals, http.StatusUnauthorized, check.Commentf("%s", r))
	r = s.tags(c, reg.Host+"/tags/none", a, "")
	c.Check(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s", r))
	r = s.tags(c, name, a, "sort=random")
	c.Check(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s", r))
}

// A registry whose tag list always links to a next page: the listing ends
// at its page bound with an error naming the registry.
func (s *ReferrersTagsSuite) TestTagsEndlessLinkChainIsBounded(c *check.C) {
	var pages atomic.Int64
	reg, err := hostile.Start(hostile.Options{Fault: func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
		if req.Kind != hostile.KindTags {
			return false
		}
		i := pages.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/list?n=1&last=t%d>; rel="next"`, req.Repo, i))
		fmt.Fprintf(w, `{"name":%q,"tags":["t%d"]}`, req.Repo, i)
		return true
	}})
	c.Assert(err, check.IsNil)
	defer reg.Close()

	r := s.tags(c, reg.Name(), "", "")
	c.Check(r.Status, check.Equals, http.StatusBadGateway, check.Commentf("%s", r))
	c.Check(r.Message(), check.Matches, `.*`+regexpQuote(reg.Host)+`.*exceeded 1000 pages.*`)
	c.Check(pages.Load(), check.Equals, int64(1000))

	// A next page on another host is refused before it is asked for.
	pages.Store(0)
	other, err := hostile.Start(hostile.Options{Fault: func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
		if req.Kind != hostile.KindTags {
			return false
		}
		pages.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Link", fmt.Sprintf(`<%s/v2/%s/tags/list?n=1&last=x>; rel="next"`, reg.URL, req.Repo))
		fmt.Fprintf(w, `{"name":%q,"tags":["x"]}`, req.Repo)
		return true
	}})
	c.Assert(err, check.IsNil)
	defer other.Close()
	r = s.tags(c, other.Name(), "", "")
	c.Check(r.Status, check.Equals, http.StatusBadGateway, check.Commentf("%s", r))
	c.Check(r.Message(), check.Matches, `.*another registry.*`)
	c.Check(pages.Load(), check.Equals, int64(1), check.Commentf("the other host was asked"))
}
