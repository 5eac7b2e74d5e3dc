package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// RemoteInspectSuite is the reason wharf exists: GET /images/NAME/json?remote=1
// and `wharf inspect --remote` against real registries.
type RemoteInspectSuite struct {
	suiteFixture
	regs *registries
	d    *Daemon

	// Fixtures pushed without wharf in SetUpSuite.
	ociIndex, dockerList *testregistry.Index
	ociImg, dockerImg    *testregistry.Image
}

func TestRemoteInspectSuite(t *testing.T) { t.Parallel(); runSuite(t, &RemoteInspectSuite{}) }

func (s *RemoteInspectSuite) SetUpSuite(c *check.C) {
	s.regs = s.startRegistries(c)
	a := s.regs.anon
	s.ociIndex = pushIndex(c, a, "ri/oci-index", "1.0", testregistry.IndexOptions{Attestation: true, Labels: map[string]string{"kind": "oci-index"}})
	s.dockerList = pushIndex(c, a, "ri/docker-list", "1.0", testregistry.IndexOptions{Docker: true})
	s.ociImg = pushImage(c, a, "ri/oci", "1.0", testregistry.ImageOptions{Labels: map[string]string{"kind": "oci"}, Annotations: map[string]string{"org.opencontainers.image.title": "oci-fixture"}})
	s.dockerImg = pushImage(c, a, "ri/schema2", "1.0", testregistry.ImageOptions{Docker: true, Labels: map[string]string{"kind": "schema2"}, Layers: 2})
	s.d = s.startDaemon(c)
}

// remote is GET /images/NAME/json?remote=1[&extra] with X-Registry-Auth.
func (s *RemoteInspectSuite) remote(c *check.C, d *Daemon, name, authHdr, extra string) Response {
	path := "/v1.50/images/" + name + "/json?remote=1"
	if extra != "" {
		path += "&" + extra
	}
	var hdr []string
	if authHdr != "" {
		hdr = []string{"X-Registry-Auth", authHdr}
	}
	return d.Req(c, http.MethodGet, path, nil, hdr...)
}

func (s *RemoteInspectSuite) remoteOK(c *check.C, d *Daemon, name, authHdr, extra string) map[string]any {
	r := s.remote(c, d, name, authHdr, extra)
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("remote inspect %s: %s\n--- wharfd log tail ---\n%s", name, r, logTail(d)))
	var m map[string]any
	r.JSON(c, &m)
	return m
}

func logTail(d *Daemon) string {
	l := d.Log()
	if len(l) > 3000 {
		l = l[len(l)-3000:]
	}
	return l
}

func (s *RemoteInspectSuite) TestInspectRemoteAfterLocalDelete(c *check.C) {
	d := s.d
	name := s.regs.anon.Host + "/seed/app:1.0"
	d.Import(c, "seed/source:1", `CMD ["/bin/sh","-c","echo hi"]`, "LABEL org.example=seed", "ENV SEED=1")
	d.WharfOK(c, "tag", "seed/source:1", name)
	// Only the registry name stays, so RepoTags can match the remote answer.
	untag := d.WharfOK(c, "rmi", "seed/source:1")
	c.Assert(untag.Stdout, check.Equals, "Untagged: seed/source:1\n")
	before := inspectArray(c, d.WharfOK(c, "inspect", name).Stdout)
	c.Assert(before, check.HasLen, 1)
	c.Assert(before[0]["RepoTags"], check.DeepEquals, []any{name})

	push := d.WharfOK(c, "push", name)
	c.Assert(push.Stdout, check.Matches, `(?s).*1\.0: digest: sha256:[0-9a-f]{64} size: [0-9]+.*`)

	local := inspectArray(c, d.WharfOK(c, "inspect", name).Stdout)[0]
	remote1 := d.WharfOK(c, "inspect", "--remote", name)
	remote := inspectArray(c, remote1.Stdout)
	c.Assert(remote, check.HasLen, 1)
	compareLocalRemote(c, local, remote[0])
	c.Assert(remote[0]["Registry"], check.Equals, s.regs.anon.Host)
	c.Assert(remote[0]["Tag"], check.Equals, "1.0")
	c.Assert(fmt.Sprint(local["RepoDigests"]), check.Matches, `.*seed/app@`+fmt.Sprint(remote[0]["Digest"])+`.*`)

	// The API answers the same document (both at 1.50, the version
	// s.remote asks: the CLI speaks 1.55, where empty Config keys go).
	api := s.remoteOK(c, d, name, "", "")
	var local150 map[string]any
	d.Get(c, "/v1.50/images/"+name+"/json").JSON(c, &local150)
	compareLocalRemote(c, local150, api)
	c.Assert(api["Digest"], check.Equals, remote[0]["Digest"])

	d.WharfOK(c, "rmi", name)
	gone := d.Wharf(c, "inspect", name)
	c.Assert(gone.ExitCode, check.Equals, 1, check.Commentf("%s", gone))
	c.Assert(gone.Stderr, check.Matches, `(?s).*No such image or container: `+regexpQuote(name)+`.*`)
	c.Assert(d.Get(c, "/v1.50/images/"+name+"/json").Status, check.Equals, http.StatusNotFound)

	remote2 := d.WharfOK(c, "inspect", "--remote", name)
	c.Assert(remote2.Stdout, check.Equals, remote1.Stdout, check.Commentf("remote inspect changed after the local image was deleted"))
}

func regexpQuote(s string) string {
	r := strings.NewReplacer(".", `\.`, "/", `/`, ":", `:`, "+", `\+`, "*", `\*`, "?", `\?`, "(", `\(`, ")", `\)`, "[", `\[`, "]", `\]`)
	return r.Replace(s)
}

func (s *RemoteInspectSuite) TestInspectMissingRepositoryLocalAndRemote(c *check.C) {
	name := s.regs.anon.Host + "/ri/no-such-repo:1.0"
	local := s.d.Wharf(c, "inspect", name)
	c.Assert(local.ExitCode, check.Equals, 1, check.Commentf("%s", local))
	c.Assert(local.Stderr, check.Matches, `(?s).*No such image or container: `+regexpQuote(name)+`.*`)

	remote := s.d.Wharf(c, "inspect", "--remote", name)
	c.Assert(remote.ExitCode, check.Equals, 1, check.Commentf("%s", remote))
	c.Assert(remote.Stderr, check.Matches, `(?s).*No such image: `+regexpQuote(name)+`.*`)
	c.Assert(remote.Stderr, check.Not(check.Matches), `(?s).*or container.*`)

	r := s.remote(c, s.d, name, "", "")
	c.Assert(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s", r))
	c.Assert(r.Message(), check.Matches, `.*No such image: .*ri/no-such-repo.*`)
	// A missing tag in an existing repository is also 404.
	r = s.remote(c, s.d, s.regs.anon.Host+"/ri/oci:nope", "", "")
	c.Assert(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s", r))
}

func (s *RemoteInspectSuite) indexes() map[string]*testregistry.Index {
	return map[string]*testregistry.Index{
		s.regs.anon.Host + "/ri/oci-index:1.0":   s.ociIndex,
		s.regs.anon.Host + "/ri/docker-list:1.0": s.dockerList,
	}
}

func (s *RemoteInspectSuite) TestInspectRemoteIndexPicksDaemonPlatformByDefault(c *check.C) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		c.Skip("fixtures carry amd64 and arm64 only")
	}
	for name, ix := range s.indexes() {
		want := ix.Images[0]
		if runtime.GOARCH == "arm64" {
			want = ix.Images[1]
		}
		m := s.remoteOK(c, s.d, name, "", "")
		c.Check(m["Id"], check.Equals, want.ID(), check.Commentf("%s", name))
		c.Check(m["Architecture"], check.Equals, runtime.GOARCH, check.Commentf("%s", name))
		c.Check(m["Digest"], check.Equals, ix.Digest(), check.Commentf("%s: Digest must pin the index", name))
		c.Check(m["PlatformManifestDigest"], check.Equals, want.Manifest.Digest, check.Commentf("%s", name))
		c.Check(m["Tag"], check.Equals, "1.0")
		c.Check(m["RepoDigests"], check.DeepEquals, []any{strings.TrimSuffix(name, ":1.0") + "@" + ix.Digest()})
		desc, _ := m["Descriptor"].(map[string]any)
		c.Check(desc["digest"], check.Equals, ix.Digest())
		c.Check(desc["mediaType"], check.Equals, ix.Index.MediaType)
		_, hasManifests := m["Manifests"]
		c.Check(hasManifests, check.Equals, false, check.Commentf("Manifests only with manifests=1"))
	}
}

func (s *RemoteInspectSuite) TestInspectRemoteIndexWithPlatform(c *check.C) {
	arm := ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
	for name, ix := range s.indexes() {
		m := s.remoteOK(c, s.d, name, "", "platform="+platformQuery(arm))
		c.Check(m["Id"], check.Equals, ix.Images[1].ID(), check.Commentf("%s", name))
		c.Check(m["Architecture"], check.Equals, "arm64")
		c.Check(m["Variant"], check.Equals, "v8")
		c.Check(m["PlatformManifestDigest"], check.Equals, ix.Images[1].Manifest.Digest)
		c.Check(m["Digest"], check.Equals, ix.Digest())

		out := s.d.WharfOK(c, "inspect", "--remote", "--platform", "linux/arm64/v8", name)
		arr := inspectArray(c, out.Stdout)
		c.Check(arr[0]["Id"], check.Equals, ix.Images[1].ID())
	}
}

func (s *RemoteInspectSuite) TestInspectRemoteAbsentPlatformListsAvailableOnes(c *check.C) {
	for name := range s.indexes() {
		r := s.remote(c, s.d, name, "", "platform="+platformQuery(ocispec.Platform{OS: "linux", Architecture: "s390x"}))
		c.Check(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s: %s", name, r))
		c.Check(r.Message(), check.Matches, `(?s).*linux/s390x.*`, check.Commentf("%s", name))
		c.Check(r.Message(), check.Matches, `(?s).*linux/amd64.*linux/arm64.*`, check.Commentf("%s: the error should list the platforms", name))
		cli := s.d.Wharf(c, "inspect", "--remote", "--platform", "linux/s390x", name)
		c.Check(cli.ExitCode, check.Equals, 1)
		c.Check(cli.Stderr, check.Matches, `(?s).*linux/amd64.*`)
	}
}

func (s *RemoteInspectSuite) TestInspectRemoteManifestsListsEveryEntry(c *check.C) {
	for name, ix := range s.indexes() {
		m := s.remoteOK(c, s.d, name, "", "manifests=1")
		list, _ := m["Manifests"].([]any)
		want := len(ix.Images)
		if ix.Attestation != nil {
			want++
		}
		c.Assert(list, check.HasLen, want, check.Commentf("%s: %v", name, m["Manifests"]))
		kinds := map[string]int{}
		for i, e := range list {
			em, _ := e.(map[string]any)
			kinds[fmt.Sprint(em["Kind"])]++
			desc, _ := em["Descriptor"].(map[string]any)
			if i < len(ix.Images) {
				c.Check(desc["digest"], check.Equals, ix.Images[i].Manifest.Digest)
				c.Check(em["ID"], check.Equals, ix.Images[i].Manifest.Digest)
			}
		}
		c.Check(kinds["image"], check.Equals, len(ix.Images), check.Commentf("%s", name))
		if ix.Attestation != nil {
			c.Check(kinds["attestation"], check.Equals, 1, check.Commentf("%s", name))
		}
	}
}

func (s *RemoteInspectSuite) TestInspectRemotePlatformAndManifestsConflict(c *check.C) {
	name := s.regs.anon.Host + "/ri/oci-index:1.0"
	r := s.remote(c, s.d, name, "", "manifests=1&platform="+platformQuery(ocispec.Platform{OS: "linux", Architecture: "amd64"}))
	c.Assert(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s", r))
	c.Assert(r.Message(), check.Matches, `(?i).*conflicting options.*`)
}

func (s *RemoteInspectSuite) TestInspectRemoteSinglePlatformByTagAndDigest(c *check.C) {
	for repo, img := range map[string]*testregistry.Image{"ri/oci": s.ociImg, "ri/schema2": s.dockerImg} {
		name := s.regs.anon.Host + "/" + repo
		m := s.remoteOK(c, s.d, name+":1.0", "", "")
		c.Check(m["Id"], check.Equals, img.ID(), check.Commentf("%s", repo))
		c.Check(m["Digest"], check.Equals, img.Manifest.Digest)
		c.Check(m["Tag"], check.Equals, "1.0")
		c.Check(m["Size"], check.Equals, float64(img.Size()), check.Commentf("%s: Size = compressed layer bytes", repo))
		c.Check(m["RepoTags"], check.DeepEquals, []any{name + ":1.0"})
		c.Check(m["RepoDigests"], check.DeepEquals, []any{name + "@" + img.Manifest.Digest})
		rootfs, _ := m["RootFS"].(map[string]any)
		c.Check(rootfs["Layers"], check.HasLen, len(img.Layers))
		desc, _ := m["Descriptor"].(map[string]any)
		c.Check(desc["mediaType"], check.Equals, img.Manifest.MediaType)
		c.Check(desc["size"], check.Equals, float64(len(img.Manifest.Data)))
		cfg, _ := m["Config"].(map[string]any)
		c.Check(fmt.Sprint(cfg["Labels"]), check.Matches, `.*kind:`+strings.TrimPrefix(repo, "ri/")+`.*`)
		c.Check(m["Created"], check.Equals, "2025-03-14T15:09:26Z")
		if repo == "ri/oci" {
			c.Check(m["ManifestAnnotations"], check.DeepEquals, map[string]any{"org.opencontainers.image.title": "oci-fixture"})
		}

		byDigest := s.remoteOK(c, s.d, name+"@"+img.Manifest.Digest, "", "")
		c.Check(byDigest["Id"], check.Equals, img.ID())
		c.Check(byDigest["Digest"], check.Equals, img.Manifest.Digest)
		c.Check(byDigest["Tag"], check.Equals, "")
	}
	// An index by digest.
	m := s.remoteOK(c, s.d, s.regs.anon.Host+"/ri/oci-index@"+s.ociIndex.Digest(), "", "")
	c.Assert(m["Digest"], check.Equals, s.ociIndex.Digest())
}

func (s *RemoteInspectSuite) TestInspectRemoteWithBasicAndTokenAuth(c *check.C) {
	for _, reg := range []*testregistry.Registry{s.regs.basic, s.regs.token} {
		img := pushImage(c, reg, "ri/private", "1.0", testregistry.ImageOptions{})
		name := reg.Host + "/ri/private:1.0"
		m := s.remoteOK(c, s.d, name, auth(reg), "")
		c.Check(m["Id"], check.Equals, img.ID(), check.Commentf("%s auth", reg.Auth))

		r := s.remote(c, s.d, name, "", "")
		c.Check(r.Status, check.Equals, http.StatusUnauthorized, check.Commentf("%s auth, no credentials: %s", reg.Auth, r))
		c.Check(r.Message(), check.Matches, `(?i).*(unauthorized|authentication required).*`)
		r = s.remote(c, s.d, name, RegistryAuth(reg.Username, "wrong-password", reg.Host), "")
		c.Check(r.Status, check.Equals, http.StatusUnauthorized, check.Commentf("%s auth, wrong password: %s", reg.Auth, r))

		// The CLI uses what `wharf login` stored.
		d := StartDaemon(c)
		login := d.WharfIn(c, []byte(reg.Password+"\n"), "login", reg.Host, "-u", reg.Username, "--password-stdin")
		c.Check(login.ExitCode, check.Equals, 0, check.Commentf("%s", login))
		out := d.Wharf(c, "inspect", "--remote", name)
		c.Check(out.ExitCode, check.Equals, 0, check.Commentf("%s", out))
		if out.ExitCode == 0 {
			c.Check(inspectArray(c, out.Stdout)[0]["Id"], check.Equals, img.ID())
		}
		d.Stop(c)
		c.Check(strings.Contains(d.Log(), reg.Password), check.Equals, false, check.Commentf("wharfd logged the password"))
	}
}

func (s *RemoteInspectSuite) TestInspectRemoteShortNameSearchesAddRegistry(c *check.C) {
	img := pushImage(c, s.regs.anon, "shortname/app", "1.0", testregistry.ImageOptions{})
	d := StartDaemon(c, "--add-registry", s.regs.anon.Host)
	defer d.Stop(c)
	m := s.remoteOK(c, d, "shortname/app:1.0", "", "")
	c.Assert(m["Registry"], check.Equals, s.regs.anon.Host)
	c.Assert(m["Id"], check.Equals, img.ID())
}

func (s *RemoteInspectSuite) TestInspectRemoteSeesTagMovedToNewImage(c *check.C) {
	first := pushImage(c, s.regs.anon, "ri/moving", "1.0", testregistry.ImageOptions{})
	name := s.regs.anon.Host + "/ri/moving:1.0"
	c.Assert(s.remoteOK(c, s.d, name, "", "")["Id"], check.Equals, first.ID())
	second := pushImage(c, s.regs.anon, "ri/moving", "1.0", testregistry.ImageOptions{Labels: map[string]string{"v": "2"}})
	m := s.remoteOK(c, s.d, name, "", "")
	c.Assert(m["Id"], check.Equals, second.ID(), check.Commentf("a moved tag must not be served from a cache"))
	c.Assert(m["Digest"], check.Equals, second.Manifest.Digest)
}

func (s *RemoteInspectSuite) TestInspectRemoteRoundTripBudgetOnTokenRegistry(c *check.C) {
	reg := s.regs.token
	single := pushImage(c, reg, "budget/single", "1.0", testregistry.ImageOptions{})
	multi := pushIndex(c, reg, "budget/multi", "1.0", testregistry.IndexOptions{})
	d := StartDaemon(c) // cold caches
	defer d.Stop(c)
	a := auth(reg)

	reg.ResetCounters()
	m := s.remoteOK(c, d, reg.Host+"/budget/single:1.0", a, "")
	c.Assert(m["Id"], check.Equals, single.ID())
	c.Logf("cold single: %v", reg.RequestLog())
	c.Assert(reg.Requests() <= 4, check.Equals, true, check.Commentf("cold single-platform inspect made %d requests: %v", reg.Requests(), reg.RequestLog()))

	reg.ResetCounters()
	m = s.remoteOK(c, d, reg.Host+"/budget/multi:1.0", a, "")
	c.Assert(m["Digest"], check.Equals, multi.Digest())
	c.Logf("cold multi: %v", reg.RequestLog())
	c.Assert(reg.Requests() <= 5, check.Equals, true, check.Commentf("cold multi-platform inspect made %d requests: %v", reg.Requests(), reg.RequestLog()))

	reg.ResetCounters()
	s.remoteOK(c, d, reg.Host+"/budget/single:1.0", a, "")
	c.Assert(reg.RequestLog(), check.DeepEquals, []string{"HEAD /v2/budget/single/manifests/1.0"},
		check.Commentf("warm inspect of an unchanged tag must be exactly one HEAD"))

	reg.ResetCounters()
	m = s.remoteOK(c, d, reg.Host+"/budget/single@"+single.Manifest.Digest, a, "")
	c.Assert(m["Id"], check.Equals, single.ID())
	c.Assert(reg.RequestLog(), check.HasLen, 0, check.Commentf("a digest reference already seen must cost nothing"))
}

// remoteQuery adds remote=1 to every /images/…/json request the SDK sends:
// the SDK has no option for it, so this is its raw request with remote=1.
type remoteQuery struct{ base http.RoundTripper }

func (t remoteQuery) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.Path, "/v") && strings.HasSuffix(r.URL.Path, "/json") && strings.Contains(r.URL.Path, "/images/") {
		r = r.Clone(r.Context())
		q := r.URL.Query()
		q.Set("remote", "1")
		r.URL.RawQuery = q.Encode()
	}
	return t.base.RoundTrip(r)
}

func (s *RemoteInspectSuite) TestInspectRemoteThroughGoSDK(c *check.C) {
	hc := s.d.HTTPClient()
	hc.Transport = remoteQuery{base: hc.Transport}
	cli, err := client.New(client.WithHost(s.d.Host), client.WithHTTPClient(hc), client.WithVersion("1.50"))
	c.Assert(err, check.IsNil)
	defer cli.Close()
	ctx := context.Background()
	name := s.regs.anon.Host + "/ri/oci:1.0"
	var raw bytes.Buffer
	res, err := cli.ImageInspect(ctx, name, client.ImageInspectWithRawResponse(&raw))
	c.Assert(err, check.IsNil)
	c.Assert(res.ID, check.Equals, s.ociImg.ID())
	var extra struct{ Registry, Digest, Tag string }
	c.Assert(json.Unmarshal(raw.Bytes(), &extra), check.IsNil)
	c.Assert(extra.Registry, check.Equals, s.regs.anon.Host)
	c.Assert(extra.Digest, check.Equals, s.ociImg.Manifest.Digest)

	plain, err := client.New(client.WithHost(s.d.Host), client.WithHTTPClient(s.d.HTTPClient()), client.WithVersion("1.50"))
	c.Assert(err, check.IsNil)
	defer plain.Close()
	di, err := plain.DistributionInspect(ctx, s.regs.anon.Host+"/ri/oci-index:1.0", client.DistributionInspectOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(di.Descriptor.Digest.String(), check.Equals, s.ociIndex.Digest())
	c.Assert(di.Descriptor.MediaType, check.Equals, testregistry.MediaTypeOCIIndex)
	var plats []string
	for _, p := range di.Platforms {
		plats = append(plats, p.OS+"/"+p.Architecture)
	}
	c.Assert(strings.Join(plats, ","), check.Matches, `.*linux/amd64.*linux/arm64.*`)

	di, err = plain.DistributionInspect(ctx, s.regs.anon.Host+"/ri/schema2:1.0", client.DistributionInspectOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(di.Descriptor.Digest.String(), check.Equals, s.dockerImg.Manifest.Digest)
	c.Assert(di.Descriptor.Size, check.Equals, int64(len(s.dockerImg.Manifest.Data)))
	c.Assert(di.Platforms, check.HasLen, 1)
	c.Assert(di.Platforms[0].Architecture, check.Equals, "amd64")
}

func (s *RemoteInspectSuite) TestInspectRemoteRawPrintsManifestAsServed(c *check.C) {
	for repo, want := range map[string][]byte{
		"ri/oci:1.0":         s.ociImg.Manifest.Data,
		"ri/oci-index:1.0":   s.ociIndex.Index.Data,
		"ri/docker-list:1.0": s.dockerList.Index.Data,
	} {
		out := s.d.WharfOK(c, "inspect", "--remote", "--raw", s.regs.anon.Host+"/"+repo)
		c.Check(strings.TrimSuffix(out.Stdout, "\n"), check.Equals, string(want), check.Commentf("%s", repo))
	}
	bad := s.d.Wharf(c, "inspect", "--raw", s.regs.anon.Host+"/ri/oci:1.0")
	c.Assert(bad.ExitCode, check.Not(check.Equals), 0, check.Commentf("--raw without --remote must be refused"))
}

func (s *RemoteInspectSuite) TestInspectRemoteLogsEventAndDebugLine(c *check.C) {
	d := StartDaemon(c)
	defer d.Stop(c)
	since := time.Now().Add(-time.Second).Unix()
	name := s.regs.anon.Host + "/ri/oci:1.0"
	m := s.remoteOK(c, d, name, "", "")
	until := time.Now().Add(time.Second).Unix()
	c.Check(d.Log(), check.Matches, `(?s).*Inspecting image `+regexpQuote(name)+`@`+s.ociImg.Manifest.Digest+`.*`)
	r := d.Get(c, fmt.Sprintf("/v1.50/events?since=%d&until=%d", since, until))
	c.Assert(r.Status, check.Equals, http.StatusOK)
	found := false
	for _, e := range r.Lines(c) {
		if e["Action"] == "inspect" {
			found = true
			actor, _ := e["Actor"].(map[string]any)
			c.Check(actor["ID"], check.Equals, m["Id"])
		}
	}
	c.Assert(found, check.Equals, true, check.Commentf("no inspect event: %s", r.Body))
}

func (s *RemoteInspectSuite) TestInspectRemoteForwardsXMetaHeaders(c *check.C) {
	reg := s.regs.anon
	reg.ResetCounters()
	r := s.d.Req(c, http.MethodGet, "/v1.50/images/"+reg.Host+"/ri/oci:1.0/json?remote=1", nil, "X-Meta-Wharf-Trace", "trace-42")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	vals := reg.Counter.HeaderValues("X-Meta-Wharf-Trace")
	c.Assert(len(vals) > 0, check.Equals, true, check.Commentf("no registry request seen"))
	for i, v := range vals {
		c.Check(v, check.Equals, "trace-42", check.Commentf("request %d (%s) lacks the X-Meta header", i, reg.Counter.Requests()[i]))
	}
}

func (s *RemoteInspectSuite) TestInspectRemoteAnonymousTokenForPublicRepository(c *check.C) {
	// Docker Hub's shape: token auth, anonymous pull tokens.
	pub, err := testregistry.Start(testregistry.Options{Auth: testregistry.AuthToken, AnonymousPull: true})
	c.Assert(err, check.IsNil)
	defer pub.Close()
	img := pushImage(c, pub, "library/public", "latest", testregistry.ImageOptions{})
	pub.ResetCounters() // forget the fixture upload, which used credentials
	m := s.remoteOK(c, s.d, pub.Host+"/library/public:latest", "", "")
	c.Assert(m["Id"], check.Equals, img.ID())
	c.Assert(pub.TokenCounter.Count("GET token") >= 1, check.Equals, true, check.Commentf("no anonymous token was fetched: %v", pub.RequestLog()))
	for _, h := range pub.TokenCounter.HeaderValues("Authorization") {
		c.Check(h, check.Equals, "", check.Commentf("anonymous token request carried credentials"))
	}
	// No tag given: latest.
	m = s.remoteOK(c, s.d, pub.Host+"/library/public", "", "")
	c.Assert(m["Tag"], check.Equals, "latest")
}

func (s *RemoteInspectSuite) TestInspectRemoteRejectsContentNotMatchingItsDigest(c *check.C) {
	reg := s.regs.anon
	img := pushImage(c, reg, "ri/corrupt", "1.0", testregistry.ImageOptions{})
	c.Assert(reg.CorruptBlob(img.Config.Digest), check.IsNil)
	d := StartDaemon(c) // nothing cached
	defer d.Stop(c)
	r := s.remote(c, d, reg.Host+"/ri/corrupt:1.0", "", "")
	c.Assert(r.Status, check.Not(check.Equals), http.StatusOK, check.Commentf("a config blob that does not match its digest was accepted: %s", r))
	c.Assert(r.Message(), check.Matches, `(?i).*(digest|verif|mismatch).*`, check.Commentf("%s", r))
	c.Assert(d.Get(c, "/_ping").Status, check.Equals, http.StatusOK)
}

func (s *RemoteInspectSuite) TestDistributionInspectAnswersAndErrors(c *check.C) {
	host := s.regs.anon.Host
	r := s.d.Get(c, "/v1.50/distribution/"+host+"/ri/docker-list:1.0/json")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	var di struct {
		Descriptor struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
			Size      int64  `json:"size"`
		}
		Platforms []ocispec.Platform
	}
	r.JSON(c, &di)
	c.Assert(di.Descriptor.Digest, check.Equals, s.dockerList.Digest())
	c.Assert(di.Descriptor.MediaType, check.Equals, testregistry.MediaTypeDockerList)
	c.Assert(di.Descriptor.Size, check.Equals, int64(len(s.dockerList.Index.Data)))
	c.Assert(di.Platforms, check.DeepEquals, []ocispec.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}})

	// By digest.
	r = s.d.Get(c, "/v1.50/distribution/"+host+"/ri/oci@"+s.ociImg.Manifest.Digest+"/json")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))

	r = s.d.Get(c, "/v1.50/distribution/UPPER:case/json")
	c.Check(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s", r))
	c.Check(r.Message(), check.Matches, `invalid reference format.*`)
	r = s.d.Get(c, "/v1.50/distribution/"+host+"/ri/no-such-repo:1.0/json")
	c.Check(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s", r))
	r = s.d.Get(c, "/v1.50/distribution/"+host+"/ri/oci:nope/json")
	c.Check(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s", r))

	reg := s.regs.basic
	pushImage(c, reg, "ri/dist-private", "1.0", testregistry.ImageOptions{})
	r = s.d.Get(c, "/v1.50/distribution/"+reg.Host+"/ri/dist-private:1.0/json", "X-Registry-Auth", RegistryAuth(reg.Username, "wrong", reg.Host))
	c.Check(r.Status, check.Equals, http.StatusUnauthorized, check.Commentf("%s", r))
	r = s.d.Get(c, "/v1.50/distribution/"+reg.Host+"/ri/dist-private:1.0/json", "X-Registry-Auth", auth(reg))
	c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	// An invalid X-Registry-Auth is ignored (anonymous), not a 400.
	r = s.d.Get(c, "/v1.50/distribution/"+host+"/ri/oci:1.0/json", "X-Registry-Auth", "%%%not-base64")
	c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
}

func (s *RemoteInspectSuite) TestInspectRemoteFormatAndOldAPIVersion(c *check.C) {
	name := s.regs.anon.Host + "/ri/oci:1.0"
	out := s.d.WharfOK(c, "inspect", "--remote", "--format", "{{.Registry}} {{.Tag}} {{.Digest}} {{.Id}}", name)
	c.Assert(out.Stdout, check.Equals, fmt.Sprintf("%s 1.0 %s %s\n", s.regs.anon.Host, s.ociImg.Manifest.Digest, s.ociImg.ID()))
	out = s.d.WharfOK(c, "inspect", "-r", "-f", "{{json .Config.Labels}}", name)
	c.Assert(out.Stdout, check.Equals, `{"kind":"oci"}`+"\n")

	// Old clients get the same answer, version-gated like a local inspect.
	r := s.d.Get(c, "/v1.41/images/"+name+"/json?remote=1")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	var m map[string]any
	r.JSON(c, &m)
	c.Assert(m["Id"], check.Equals, s.ociImg.ID())
	c.Assert(m["Digest"], check.Equals, s.ociImg.Manifest.Digest)
	_, hasDescriptor := m["Descriptor"]
	c.Assert(hasDescriptor, check.Equals, false, check.Commentf("Descriptor is >= 1.48 only"))
}
