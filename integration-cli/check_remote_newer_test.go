package integration

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// CheckRemoteNewerSuite is issue 24, parts 1 and 2, against the real
// registry with token auth: `wharf images --check-remote --newer` (newer
// versions of the same shape, one tag listing per repository) and
// `--base` (the base.name/.digest annotations and labels, platform-aware).
type CheckRemoteNewerSuite struct {
	suiteFixture
	tok *testregistry.Registry
	d   *Daemon

	base1, base2   *testregistry.Image // nv/base:3.19 when built on, and now
	mpOld, mpSame  *testregistry.Index // nv/mpbase:1 built on; now (other platform changed only)
	mpMoved        *testregistry.Index // nv/mpmoved:1 now (the image's platform changed)
	builtOnMoved   string              // the repository:tag of each built image
	builtOnLabels  string
	builtOnMPSame  string
	builtOnMPMoved string
	builtOnMPEntry string
}

func TestCheckRemoteNewerSuite(t *testing.T) { t.Parallel(); runSuite(t, &CheckRemoteNewerSuite{}) }

// newerTags are the tags of nv/app (all one image: only the names matter
// to the newer-version check).
var newerTags = strings.Fields(`latest stable 20240101 20240201
	1.25 1.26 1.27 1.25.3 1.25.4 1.27.0 1.27.3 2.0.0 2.1
	1.25-alpine 1.27-alpine 1.27-bookworm 1.28
	1.26.0-rc1 1.26.0-rc2 1.28.0-rc1
	v1.2 v1.3 1.3`)

// newerPulled are the tags of nv/app the daemon pulls.
var newerPulled = strings.Fields(`1.25 1.25.3 1.25-alpine 1.26.0-rc1 v1.2 latest 20240101 2.0.0`)

func (s *CheckRemoteNewerSuite) SetUpSuite(c *check.C) {
	tok := s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken})
	s.tok = tok
	s.d = s.startDaemon(c)
	d := s.d
	login := d.WharfIn(c, []byte(tok.Password+"\n"), "login", tok.Host, "-u", tok.Username, "--password-stdin")
	c.Assert(login.ExitCode, check.Equals, 0, check.Commentf("%s", login))
	ctx, cancel := fixtureCtx()
	defer cancel()

	// Versions: one image under every tag of nv/app; nv/other another
	// repository of versions.
	img := pushImage(c, tok, "nv/app", newerTags[0], testregistry.ImageOptions{})
	for _, t := range newerTags[1:] {
		c.Assert(tok.Client().PutManifest(ctx, "nv/app", t, img.Manifest), check.IsNil)
	}
	other := pushImage(c, tok, "nv/other", "1.0", testregistry.ImageOptions{})
	c.Assert(tok.Client().PutManifest(ctx, "nv/other", "1.1", other.Manifest), check.IsNil)

	// Bases: a single-platform base that moves, one that stays, and two
	// multi-platform bases, one of which moves only its other platform.
	s.base1 = pushImage(c, tok, "nv/base", "3.19", testregistry.ImageOptions{})
	stay := pushImage(c, tok, "nv/base", "stay", testregistry.ImageOptions{})
	s.mpOld = pushIndex(c, tok, "nv/mpbase", "1", testregistry.IndexOptions{})
	mpMovedOld := pushIndex(c, tok, "nv/mpmoved", "1", testregistry.IndexOptions{})
	b := tok.Host + "/nv/"
	baseAnn := func(name, dgst string) map[string]string {
		return map[string]string{ocispec.AnnotationBaseImageName: name, ocispec.AnnotationBaseImageDigest: dgst}
	}
	pushImage(c, tok, "nv/built", "onmoved", testregistry.ImageOptions{Annotations: baseAnn(b+"base:3.19", s.base1.Manifest.Digest)})
	pushImage(c, tok, "nv/built", "onmovedtoo", testregistry.ImageOptions{Annotations: baseAnn(b+"base:3.19", s.base1.Manifest.Digest)})
	pushImage(c, tok, "nv/built", "onlabels", testregistry.ImageOptions{Labels: baseAnn(b+"base:stay", stay.Manifest.Digest)})
	pushImage(c, tok, "nv/built", "onmpsame", testregistry.ImageOptions{Annotations: baseAnn(b+"mpbase:1", s.mpOld.Digest())})
	pushImage(c, tok, "nv/built", "onmpentry", testregistry.ImageOptions{Annotations: baseAnn(b+"mpbase:1", s.mpOld.Images[0].Manifest.Digest)})
	pushImage(c, tok, "nv/built", "onmpmoved", testregistry.ImageOptions{Annotations: baseAnn(b+"mpmoved:1", mpMovedOld.Digest())})
	pushImage(c, tok, "nv/built", "nobase", testregistry.ImageOptions{})
	// No annotations, for --base-name: built on nv/lbase:1 as it was
	// (layeredold), and as it is after the move (layered, pushed below).
	lbaseOld := pushImage(c, tok, "nv/lbase", "1", testregistry.ImageOptions{})
	pushStacked(c, tok, "nv/built", "layeredold", lbaseOld)
	s.builtOnMoved, s.builtOnLabels = b+"built:onmoved", b+"built:onlabels"
	s.builtOnMPSame, s.builtOnMPMoved, s.builtOnMPEntry = b+"built:onmpsame", b+"built:onmpmoved", b+"built:onmpentry"

	a := auth(tok)
	pull := func(name, tag string) {
		r, lines := d.Pull(c, tok.Host+"/"+name, tag, a, "platform", "linux/amd64")
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("pull %s:%s: %s", name, tag, r))
		c.Assert(lines.Err(), check.Equals, "", check.Commentf("pull %s:%s", name, tag))
	}
	for _, t := range newerPulled {
		pull("nv/app", t)
	}
	pull("nv/other", "1.0")
	for _, t := range []string{"onmoved", "onmovedtoo", "onlabels", "onmpsame", "onmpentry", "onmpmoved", "nobase", "layeredold"} {
		pull("nv/built", t)
	}

	// What happened since: the bases moved (nv/mpbase on its arm64
	// entry only; nv/mpmoved on the amd64 entry the images use).
	s.base2 = pushImage(c, tok, "nv/base", "3.19", testregistry.ImageOptions{})
	s.mpSame = indexWith(c, s.mpOld.Images[0], nil)
	c.Assert(tok.Client().PushIndex(ctx, "nv/mpbase", "1", s.mpSame), check.IsNil)
	s.mpMoved = indexWith(c, nil, mpMovedOld.Images[1])
	c.Assert(tok.Client().PushIndex(ctx, "nv/mpmoved", "1", s.mpMoved), check.IsNil)
	lbase := pushImage(c, tok, "nv/lbase", "1", testregistry.ImageOptions{Layers: 2})
	pushStacked(c, tok, "nv/built", "layered", lbase)
	pull("nv/built", "layered")
}

// pushStacked pushes an image whose layers are base's and one of its own,
// naming no base, as repo:tag.
func pushStacked(c *check.C, reg *testregistry.Registry, repo, tag string, base *testregistry.Image) *testregistry.Image {
	top, err := testregistry.NewImage(testregistry.ImageOptions{})
	c.Assert(err, check.IsNil)
	img := &testregistry.Image{Platform: top.Platform, Layers: append(append([]testregistry.Blob(nil), base.Layers...), top.Layers...)}
	img.DiffIDs = append(append([]string(nil), base.DiffIDs...), top.DiffIDs...)
	created := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	cfg := ocispec.Image{Created: &created, Platform: top.Platform, RootFS: ocispec.RootFS{Type: "layers"},
		Config: ocispec.ImageConfig{Cmd: []string{"/bin/sh"}}}
	for range img.DiffIDs {
		cfg.History = append(cfg.History, ocispec.History{Created: &created, CreatedBy: "ADD layer"})
	}
	for _, d := range img.DiffIDs {
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, digest.Digest(d))
	}
	sealOCI(c, img, cfg)
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(reg.Client().PushImage(ctx, repo, tag, img), check.IsNil)
	return img
}

// newerRow is what a --format json line of `images --check-remote
// --newer --base` carries.
type newerRow struct {
	Repository, Tag, RemoteStatus                string
	Newer, NewerPatch, NewerMinor, NewerMajor    string
	NewerError                                   string
	Base, BaseStatus, BaseName, BaseDigest       string
	BaseCurrentDigest, BaseCurrentPlatformDigest string
	BasePlatform, BaseError, BaseSource          string
}

func (s *CheckRemoteNewerSuite) rows(c *check.C, args ...string) map[string]newerRow {
	res := s.d.Wharf(c, append([]string{"images", "--check-remote", "--format", "json"}, args...)...)
	c.Assert(res.ExitCode, check.Equals, 0, check.Commentf("%s", res))
	rows := map[string]newerRow{}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if line == "" {
			continue
		}
		var r newerRow
		c.Assert(json.Unmarshal([]byte(line), &r), check.IsNil, check.Commentf("line %q of\n%s", line, res))
		rows[r.Repository+":"+r.Tag] = r
	}
	return rows
}

func (s *CheckRemoteNewerSuite) TestCheckRemoteNewerShapes(c *check.C) {
	app := s.tok.Host + "/nv/app"
	rows := s.rows(c, "--newer", app)
	c.Assert(rows, check.HasLen, len(newerPulled))
	for _, tc := range []struct{ tag, patch, minor, major string }{
		{"1.25", "", "1.28", "2.1"},                         // same precision: not 1.27.3 nor 2.0.0
		{"1.25.3", "1.25.4", "1.27.3", "2.0.0"},             // no pre-release offered to a release
		{"1.25-alpine", "", "1.27-alpine", ""},              // same variant: not 1.27, not 1.27-bookworm
		{"1.26.0-rc1", "1.26.0-rc2", "1.28.0-rc1", "2.0.0"}, // a pre-release is offered pre-releases
		{"v1.2", "", "v1.3", ""},                            // the v kept: never 1.3
		{"2.0.0", "", "", ""},
		{"latest", "", "", ""},   // not a version: by digest only
		{"20240101", "", "", ""}, // a date: by digest only (20240201 is not offered)
	} {
		r, ok := rows[app+":"+tc.tag]
		c.Assert(ok, check.Equals, true, check.Commentf("no row for %s: %v", tc.tag, rows))
		c.Check(r.RemoteStatus, check.Equals, "current", check.Commentf("%s: RemoteStatus unchanged", tc.tag))
		c.Check([]string{r.NewerPatch, r.NewerMinor, r.NewerMajor}, check.DeepEquals, []string{tc.patch, tc.minor, tc.major}, check.Commentf("%s: %+v", tc.tag, r))
		c.Check(r.NewerError, check.Equals, "", check.Commentf("%s", tc.tag))
	}
	c.Check(rows[app+":1.25.3"].Newer, check.Equals, "1.25.4, 1.27.3, 2.0.0")
	c.Check(rows[app+":latest"].Newer, check.Equals, "-")

	// The table gains the NEWER column.
	table := s.d.WharfOK(c, "images", "--check-remote", "--newer", app+":1.25-alpine")
	c.Check(table.Stdout, check.Matches, `(?s)REPOSITORY +TAG +IMAGE ID +CREATED +SIZE +REMOTE +NEWER\n.*1\.25-alpine .* current +1\.27-alpine\n.*`)
	// --newer alone is refused.
	r := s.d.Wharf(c, "images", "--newer")
	c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
}

// TestCheckRemoteNewerListingBudget: one tag listing per repository per
// check, however many of its tags; a repeat within --max-age costs nothing.
func (s *CheckRemoteNewerSuite) TestCheckRemoteNewerListingBudget(c *check.C) {
	tok := s.tok
	names := []string{tok.Host + "/nv/app", tok.Host + "/nv/other"}
	s.rows(c, append([]string{"--newer"}, names...)...) // warm the tokens
	tok.ResetCounters()
	rows := s.rows(c, append([]string{"--newer"}, names...)...)
	c.Check(rows[tok.Host+"/nv/other:1.0"].NewerMinor, check.Equals, "1.1")
	c.Check(tok.Counter.Count("GET tags"), check.Equals, 2, check.Commentf("one walk per repository: %v", tok.RequestLog()))
	c.Check(tok.Counter.Count("HEAD manifests"), check.Equals, len(newerPulled)+1, check.Commentf("%v", tok.RequestLog()))

	// Without --newer: no listing.
	tok.ResetCounters()
	s.rows(c, names...)
	c.Check(tok.Counter.Count("GET tags"), check.Equals, 0, check.Commentf("%v", tok.RequestLog()))

	// Within --max-age of the last: no request at all, same answers.
	s.rows(c, append([]string{"--newer"}, names...)...)
	tok.ResetCounters()
	again := s.rows(c, append([]string{"--newer", "--max-age", "10m"}, names...)...)
	c.Check(tok.RequestLog(), check.HasLen, 0)
	for k, r := range rows {
		c.Check(again[k].Newer, check.Equals, r.Newer, check.Commentf("%s", k))
	}

	// A tag added since is seen by a check without --max-age.
	pushImage(c, tok, "nv/other", "1.2", testregistry.ImageOptions{})
	rows = s.rows(c, "--newer", tok.Host+"/nv/other")
	c.Check(rows[tok.Host+"/nv/other:1.0"].NewerMinor, check.Equals, "1.2")
}

func (s *CheckRemoteNewerSuite) TestCheckRemoteBase(c *check.C) {
	s.tok.ResetCounters()
	rows := s.rows(c, "--base", s.tok.Host+"/nv/built")
	c.Assert(rows, check.HasLen, 9)
	// Two images on one base: one HEAD of the base between them.
	heads := 0
	for _, r := range s.tok.Counter.Requests() {
		if r == "HEAD /v2/nv/base/manifests/3.19" {
			heads++
		}
	}
	c.Check(heads, check.Equals, 1, check.Commentf("%v", s.tok.RequestLog()))
	c.Check(rows[s.tok.Host+"/nv/built:onmovedtoo"].BaseStatus, check.Equals, "outdated")
	row := func(name string) newerRow {
		r, ok := rows[name]
		c.Assert(ok, check.Equals, true, check.Commentf("no row for %s: %v", name, rows))
		return r
	}

	moved := row(s.builtOnMoved)
	c.Check(moved.BaseStatus, check.Equals, "outdated", check.Commentf("%+v", moved))
	c.Check(moved.BaseName, check.Equals, s.tok.Host+"/nv/base:3.19")
	c.Check(moved.BaseDigest, check.Equals, s.base1.Manifest.Digest)
	c.Check(moved.BaseCurrentDigest, check.Equals, s.base2.Manifest.Digest)
	c.Check(moved.BasePlatform, check.Equals, "linux/amd64")
	c.Check(moved.Base, check.Equals, "outdated ("+s.tok.Host+"/nv/base:3.19)")
	c.Check(moved.RemoteStatus, check.Equals, "current", check.Commentf("the image's own tag did not move"))

	labels := row(s.builtOnLabels)
	c.Check(labels.BaseStatus, check.Equals, "current", check.Commentf("config labels name the base too: %+v", labels))

	// Only the other platform of the base's index changed: not an alarm,
	// whether the image recorded the index or its platform's manifest.
	same := row(s.builtOnMPSame)
	c.Check(same.BaseStatus, check.Equals, "current", check.Commentf("%+v", same))
	c.Check(same.BaseCurrentDigest, check.Equals, s.mpSame.Digest())
	c.Check(same.BaseCurrentPlatformDigest, check.Equals, s.mpOld.Images[0].Manifest.Digest)
	c.Check(same.BasePlatform, check.Equals, "linux/amd64")
	entry := row(s.builtOnMPEntry)
	c.Check(entry.BaseStatus, check.Equals, "current", check.Commentf("%+v", entry))

	// The image's platform changed in the base's index: outdated.
	mpm := row(s.builtOnMPMoved)
	c.Check(mpm.BaseStatus, check.Equals, "outdated", check.Commentf("%+v", mpm))
	c.Check(mpm.BaseCurrentDigest, check.Equals, s.mpMoved.Digest())
	c.Check(mpm.BaseCurrentPlatformDigest, check.Equals, s.mpMoved.Images[0].Manifest.Digest)

	none := row(s.tok.Host + "/nv/built:nobase")
	c.Check(none.BaseStatus, check.Equals, "", check.Commentf("%+v", none))
	c.Check(none.Base, check.Equals, "-")
	c.Check(moved.BaseSource, check.Equals, "annotations")
	c.Check(labels.BaseSource, check.Equals, "labels")

	// A repeat within --max-age costs no request, bases included.
	s.tok.ResetCounters()
	again := s.rows(c, "--base", "--max-age", "10m", s.tok.Host+"/nv/built")
	c.Check(s.tok.RequestLog(), check.HasLen, 0)
	for k, r := range rows {
		c.Check(again[k].BaseStatus, check.Equals, r.BaseStatus, check.Commentf("%s", k))
	}

	// The API carries the same fields.
	r := s.d.Req(c, http.MethodPost, "/v1.50/wharf/images/check-remote?base=1&name="+url.QueryEscape(s.builtOnMoved), nil, "X-Registry-Auth", auth(s.tok))
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	lines := r.Lines(c)
	c.Assert(lines, check.HasLen, 1)
	c.Check(lines[0]["BaseStatus"], check.Equals, "outdated")
	c.Check(lines[0]["BaseDigest"], check.Equals, s.base1.Manifest.Digest)
	r = s.d.Req(c, http.MethodPost, "/v1.50/wharf/images/check-remote?base=maybe", nil)
	c.Check(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s", r))
}

// TestCheckRemoteBaseByLayers: --base-name REF for images that name no
// base: current when the image's layers begin with the base's current
// layers, outdated when the base moved since the image was built on it.
func (s *CheckRemoteNewerSuite) TestCheckRemoteBaseByLayers(c *check.C) {
	b := s.tok.Host + "/nv/"
	rows := s.rows(c, "--base-name", b+"lbase:1", b+"built:layered", b+"built:layeredold", b+"built:onmoved")
	c.Assert(rows, check.HasLen, 3)
	cur, old := rows[b+"built:layered"], rows[b+"built:layeredold"]
	c.Check(cur.BaseStatus, check.Equals, "current", check.Commentf("%+v", cur))
	c.Check(cur.BaseSource, check.Equals, "layers")
	c.Check(cur.BaseName, check.Equals, b+"lbase:1")
	c.Check(cur.BaseDigest, check.Equals, "", check.Commentf("no digest was recorded"))
	c.Check(old.BaseStatus, check.Equals, "outdated", check.Commentf("%+v", old))
	c.Check(old.BaseCurrentDigest, check.Equals, cur.BaseCurrentDigest)
	// An image with annotations keeps them: --base-name is for the others.
	c.Check(rows[b+"built:onmoved"].BaseSource, check.Equals, "annotations")

	r := s.d.Wharf(c, "images", "--base-name", b+"lbase:1")
	c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("--base-name needs --check-remote\n%s", r))
}
