package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// ResolveSuite holds the regression tests of issue 10: one remote-resolution
// path (registry.Service.FindImage) for remote inspect, inspect --raw,
// /distribution/{name}/json and pull, whose caches answer only the scope
// that read them, whose credentials reach only the registry they are bound
// to, and whose errors land in the right class. Every test goes through the
// real wharfd and, where it matters, the wharf and docker CLIs, against the
// real CNCF registry behind counting proxies (internal/testregistry); the
// hand-written registry of internal/hostile serves only the malformed
// manifest.
type ResolveSuite struct {
	suiteFixture
	regs *registries
	// alice is an htpasswd registry whose only user is aliceUser: credentials
	// that can belong to nothing else.
	alice *testregistry.Registry
	// pub is Docker Hub's shape: token auth, anonymous pulls allowed. Its
	// token server also knows aliceUser with the same password, so a leaked
	// credential would be accepted there (and so be visible, not fail).
	pub *testregistry.Registry
}

func TestResolveSuite(t *testing.T) { t.Parallel(); runSuite(t, &ResolveSuite{}) }

const (
	aliceUser     = "alice"
	alicePassword = "alice-Only-For-A-4711"
)

func (s *ResolveSuite) SetUpSuite(c *check.C) {
	s.regs = s.startRegistries(c)
	s.alice = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthBasic, Users: map[string]string{aliceUser: alicePassword}})
	s.pub = s.startRegistry(c, testregistry.Options{
		Auth:          testregistry.AuthToken,
		AnonymousPull: true,
		Users:         map[string]string{testregistry.DefaultUsername: testregistry.DefaultPassword, aliceUser: alicePassword},
	})
}

// rsRemote is GET /images/NAME/json?remote=1[&extra] with an optional X-Registry-Auth.
func rsRemote(c *check.C, d *Daemon, name, authHdr, extra string) Response {
	path := "/v1.50/images/" + name + "/json?remote=1"
	if extra != "" {
		path += "&" + extra
	}
	var hdr []string
	if authHdr != "" {
		hdr = []string{"X-Registry-Auth", authHdr}
	}
	return d.Get(c, path, hdr...)
}

func rsRemoteOK(c *check.C, d *Daemon, name, authHdr string) map[string]any {
	r := rsRemote(c, d, name, authHdr, "")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("remote inspect %s: %s\n--- wharfd log tail ---\n%s", name, r, logTail(d)))
	var m map[string]any
	r.JSON(c, &m)
	return m
}

// sdkAuth is the X-Registry-Auth the Docker Go SDK sends for an AuthConfig
// with only a username and a password: no serveraddress.
func sdkAuth(user, password string) string {
	b, _ := json.Marshal(map[string]string{"username": user, "password": password})
	return base64.URLEncoding.EncodeToString(b)
}

// tcpSink accepts connections and closes them at once, counting them: a
// port where something listens but no registry answers.
type tcpSink struct {
	ln       net.Listener
	accepted atomic.Int64
}

func newTCPSink(c *check.C) *tcpSink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, check.IsNil)
	t := &tcpSink{ln: ln}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.accepted.Add(1)
			conn.Close()
		}
	}()
	return t
}

func (t *tcpSink) Host() string { return t.ln.Addr().String() }
func (t *tcpSink) Close()       { t.ln.Close() }

// Finding 1: a digest read in one scope (registry, repository, credential
// identity) is answered from the cache for that scope only. Another
// repository, another registry and an anonymous caller must ask the
// registry, and get the registry's answer — never the private config.
func (s *ResolveSuite) TestDigestCacheAnswersOnlyTheScopeThatReadIt(c *check.C) {
	reg := s.regs.token
	img := pushImage(c, reg, "team/private", "1.0", testregistry.ImageOptions{Labels: map[string]string{"secret": "team-private-config"}})
	dg := img.Manifest.Digest
	d := StartDaemon(c)
	defer d.Stop(c)
	a := auth(reg)

	m := rsRemoteOK(c, d, reg.Host+"/team/private@"+dg, a)
	c.Assert(m["Id"], check.Equals, img.ID())

	// The scope that read it: nothing is asked.
	reg.ResetCounters()
	m = rsRemoteOK(c, d, reg.Host+"/team/private@"+dg, a)
	c.Assert(m["Id"], check.Equals, img.ID())
	c.Assert(reg.RequestLog(), check.HasLen, 0, check.Commentf("the same digest in the same repository with the same identity must cost nothing"))

	leaked := func(r Response) bool {
		return r.Status == http.StatusOK || bytes.Contains(r.Body, []byte(img.ID())) || bytes.Contains(r.Body, []byte("team-private-config"))
	}

	// Another repository of the same registry, which does not hold dg.
	reg.ResetCounters()
	r := rsRemote(c, d, reg.Host+"/nobody/nothing@"+dg, a, "")
	c.Check(leaked(r), check.Equals, false, check.Commentf("nobody/nothing@%s answered from the cache: %s", dg, r))
	c.Check(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s", r))
	c.Check(reg.Counter.Total() >= 1, check.Equals, true, check.Commentf("the registry was not asked for nobody/nothing@%s: %v", dg, reg.RequestLog()))

	// Another registry: a port where nothing speaks HTTP.
	sink := newTCPSink(c)
	defer sink.Close()
	r = rsRemote(c, d, sink.Host()+"/any/thing@"+dg, a, "")
	c.Check(leaked(r), check.Equals, false, check.Commentf("%s/any/thing@%s answered from the cache: %s", sink.Host(), dg, r))
	c.Check(r.Status == http.StatusBadGateway || r.Status == http.StatusServiceUnavailable, check.Equals, true, check.Commentf("want 502 or 503: %s", r))
	c.Check(sink.accepted.Load() >= 1, check.Equals, true, check.Commentf("wharfd never connected to %s", sink.Host()))
	c.Logf("another registry: %s", r)

	// The same private repository without credentials (anonymous is another identity).
	reg.ResetCounters()
	r = rsRemote(c, d, reg.Host+"/team/private@"+dg, "", "")
	c.Check(leaked(r), check.Equals, false, check.Commentf("an anonymous caller was answered from the cache: %s", r))
	c.Check(r.Status, check.Equals, http.StatusUnauthorized, check.Commentf("%s", r))
	c.Check(reg.Counter.Total() >= 1, check.Equals, true, check.Commentf("the registry was not asked for the anonymous caller: %v", reg.RequestLog()))

	// The same image in another repository the caller may read: one HEAD
	// at the registry (plus the token of the new scope), config from the cache.
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(reg.Client().PushImage(ctx, "team/copy", "1.0", img), check.IsNil)
	reg.ResetCounters()
	m = rsRemoteOK(c, d, reg.Host+"/team/copy@"+dg, a)
	c.Check(m["Id"], check.Equals, img.ID())
	c.Check(reg.Counter.Requests(), check.DeepEquals, []string{"HEAD /v2/team/copy/manifests/" + dg},
		check.Commentf("another repository holding the digest: want one HEAD, got %v", reg.RequestLog()))
	c.Check(reg.TokenCounter.Total() <= 1, check.Equals, true, check.Commentf("%v", reg.RequestLog()))
}

// Finding 1, the budget on an anonymous registry, where it is exact: the
// same digest in the same repository 0 requests, in another repository
// holding it 1 (HEAD), a warm tag 1 (HEAD).
func (s *ResolveSuite) TestDigestBudgetPerRepository(c *check.C) {
	reg := s.regs.anon
	img := pushImage(c, reg, "rsbudget/one", "1.0", testregistry.ImageOptions{})
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(reg.Client().PushImage(ctx, "rsbudget/two", "1.0", img), check.IsNil)
	dg := img.Manifest.Digest
	d := StartDaemon(c)
	defer d.Stop(c)

	rsRemoteOK(c, d, reg.Host+"/rsbudget/one@"+dg, "")
	reg.ResetCounters()
	rsRemoteOK(c, d, reg.Host+"/rsbudget/one@"+dg, "")
	c.Check(reg.RequestLog(), check.HasLen, 0, check.Commentf("same repository, same identity"))

	reg.ResetCounters()
	m := rsRemoteOK(c, d, reg.Host+"/rsbudget/two@"+dg, "")
	c.Check(m["Id"], check.Equals, img.ID())
	c.Check(reg.RequestLog(), check.DeepEquals, []string{"HEAD /v2/rsbudget/two/manifests/" + dg}, check.Commentf("another repository holding the digest"))

	reg.ResetCounters()
	rsRemoteOK(c, d, reg.Host+"/rsbudget/two@"+dg, "")
	c.Check(reg.RequestLog(), check.HasLen, 0, check.Commentf("the second repository is now a scope that read it"))

	rsRemoteOK(c, d, reg.Host+"/rsbudget/one:1.0", "")
	reg.ResetCounters()
	m = rsRemoteOK(c, d, reg.Host+"/rsbudget/one:1.0", "")
	c.Check(m["Id"], check.Equals, img.ID())
	c.Check(reg.RequestLog(), check.DeepEquals, []string{"HEAD /v2/rsbudget/one/manifests/1.0"}, check.Commentf("a warm tag"))
}

// noCredentialsAt checks that no request counted at reg carried Basic credentials
// or the password, and that its token server got no credentials at all.
func noCredentialsAt(c *check.C, reg *testregistry.Registry, what string) {
	secret := base64.StdEncoding.EncodeToString([]byte(aliceUser + ":" + alicePassword))
	reqs := reg.Counter.Requests()
	for i, h := range reg.Counter.HeaderValues("Authorization") {
		c.Check(strings.HasPrefix(strings.ToLower(h), "basic") || strings.Contains(h, secret), check.Equals, false,
			check.Commentf("%s: %s carried %q", what, reqs[i], h))
	}
	if reg.TokenCounter != nil {
		treqs := reg.TokenCounter.Requests()
		for i, h := range reg.TokenCounter.HeaderValues("Authorization") {
			c.Check(h, check.Equals, "", check.Commentf("%s: token request %s carried credentials", what, treqs[i]))
		}
		for _, r := range treqs {
			c.Check(strings.Contains(r, alicePassword), check.Equals, false, check.Commentf("%s: %s", what, r))
		}
	}
}

// Finding 2: with --add-registry A --add-registry B and a short name, an
// X-Registry-Auth without serveraddress (the Docker Go SDK's) binds to the
// first candidate, A, and never reaches B, where the name resolves. B is a
// token registry allowing anonymous pulls whose token server would accept
// the password: a leak would be silent, so it is checked at B's proxies.
func (s *ResolveSuite) TestCredentialsWithoutServerAddressBindToFirstCandidate(c *check.C) {
	a, b := s.alice, s.pub
	img := pushImage(c, b, "app", "1.0", testregistry.ImageOptions{Labels: map[string]string{"from": "B"}})
	d := StartDaemon(c, "--add-registry", a.Host, "--add-registry", b.Host, "--block-registry", "docker.io")
	defer d.Stop(c)
	hdr := sdkAuth(aliceUser, alicePassword)
	wantBasic := "Basic " + base64.StdEncoding.EncodeToString([]byte(aliceUser+":"+alicePassword))

	for _, op := range []struct {
		name string
		run  func() Response
		ok   func(r Response)
	}{
		{"remote inspect", func() Response { return rsRemote(c, d, "app:1.0", hdr, "") }, func(r Response) {
			var m map[string]any
			r.JSON(c, &m)
			c.Check(m["Id"], check.Equals, img.ID())
			c.Check(m["Registry"], check.Equals, b.Host)
		}},
		{"inspect --raw", func() Response { return rsRemote(c, d, "app:1.0", hdr, "raw=1") }, func(r Response) {
			c.Check(string(r.Body), check.Equals, string(img.Manifest.Data))
		}},
		{"distribution inspect", func() Response {
			return d.Get(c, "/v1.50/distribution/app:1.0/json", "X-Registry-Auth", hdr)
		}, func(r Response) {
			c.Check(string(r.Body), check.Matches, `(?s).*`+img.Manifest.Digest+`.*`)
		}},
		{"pull", func() Response {
			r, _ := d.Pull(c, "app", "1.0", hdr)
			return r
		}, func(r Response) {
			c.Check(r.Lines(c).Err(), check.Equals, "")
			c.Check(d.Inspect(c, b.Host+"/app:1.0")["Id"], check.Equals, img.ID())
		}},
	} {
		a.ResetCounters()
		b.ResetCounters()
		r := op.run()
		c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: %s\n%s", op.name, r, logTail(d)))
		if r.Status == http.StatusOK {
			op.ok(r)
		}
		c.Check(b.Requests() >= 1, check.Equals, true, check.Commentf("%s: B was not asked", op.name))
		noCredentialsAt(c, b, op.name)
		// The credentials went where they are bound: A, the first candidate.
		c.Check(strings.Join(a.Counter.HeaderValues("Authorization"), "\n"), check.Matches, `(?s).*`+regexpQuote(wantBasic)+`.*`,
			check.Commentf("%s: A never received the credentials: %v", op.name, a.RequestLog()))
	}
}

// Finding 3: a short name whose first candidate is a private registry
// refusing the caller is refused by inspect and pull alike; neither answers
// from the next registry (name squatting), and neither asks it. Asked
// through the API with the name as typed (fromImage=app).
func (s *ResolveSuite) TestShortNameInspectAndPullFollowOnePolicy(c *check.C) {
	a, b := s.regs.token, s.regs.anon
	img := pushImage(c, b, "app", "1.0", testregistry.ImageOptions{Labels: map[string]string{"from": "B"}})
	d := StartDaemon(c, "--add-registry", a.Host, "--add-registry", b.Host, "--block-registry", "docker.io")
	defer d.Stop(c)

	b.ResetCounters()
	r := rsRemote(c, d, "app:1.0", "", "")
	c.Check(r.Status, check.Equals, http.StatusUnauthorized, check.Commentf("inspect of a short name A refuses: %s", r))
	c.Check(r.Message(), check.Matches, `(?s).*`+regexpQuote(a.Host)+`.*`, check.Commentf("the refusal must name A: %s", r))
	c.Check(bytes.Contains(r.Body, []byte(img.ID())), check.Equals, false)
	pr, _ := d.Pull(c, "app", "1.0", "")
	c.Check(pr.Status, check.Equals, http.StatusNotFound, check.Commentf("%s", pr))
	c.Check(pr.Message(), check.Matches, `pull access denied for app, .*`+regexpQuote(a.Host)+`.*`, check.Commentf("%s", pr))
	r = d.Get(c, "/v1.50/distribution/app:1.0/json")
	c.Check(r.Status, check.Equals, http.StatusUnauthorized, check.Commentf("distribution inspect: %s", r))
	r = rsRaw(c, d, "app:1.0", "")
	c.Check(r.Status, check.Equals, http.StatusUnauthorized, check.Commentf("inspect --raw: %s", r))
	c.Check(b.RequestLog(), check.HasLen, 0, check.Commentf("B was asked although A refused"))
	c.Check(d.Get(c, "/v1.50/images/"+b.Host+"/app:1.0/json").Status, check.Equals, http.StatusNotFound, check.Commentf("pull stored B's image"))

	// The wharf CLI's inspect sends the name as typed: the same refusal.
	ins := d.Wharf(c, "inspect", "--remote", "app:1.0")
	c.Check(ins.ExitCode, check.Not(check.Equals), 0, check.Commentf("inspect --remote answered from B:\n%s", ins))
	c.Check(ins.Stderr, check.Matches, `(?s).*`+regexpQuote(a.Host)+`.*`, check.Commentf("the refusal must name A\n%s", ins))
	c.Check(b.RequestLog(), check.HasLen, 0, check.Commentf("B was asked although A refused"))

	// Not found on A (the caller may read A) moves on to B, for both.
	ah := auth(a)
	m := rsRemoteOK(c, d, "app:1.0", ah)
	c.Check(m["Registry"], check.Equals, b.Host)
	c.Check(m["Id"], check.Equals, img.ID())
	pr, lines := d.Pull(c, "app", "1.0", ah)
	c.Check(pr.Status, check.Equals, http.StatusOK, check.Commentf("%s", pr))
	c.Check(lines.Err(), check.Equals, "")
	c.Check(d.Inspect(c, b.Host+"/app:1.0")["Id"], check.Equals, img.ID())
}

// Finding 3 through the wharf CLI: `wharf pull app` and `wharf inspect
// --remote app` search the same candidates and fail the same way, naming
// the private registry A that refused. This needs the CLI to send a short
// name as typed (README: short names are searched through add-registry);
// a client that normalises it to docker.io/library/app, as the moby
// client's ImagePull does, never reaches the add-registry search.
func (s *ResolveSuite) TestShortNameWharfPullAndInspectAgree(c *check.C) {
	a, b := s.regs.token, s.regs.anon
	pushImage(c, b, "app", "1.0", testregistry.ImageOptions{})
	d := StartDaemon(c, "--add-registry", a.Host, "--add-registry", b.Host, "--block-registry", "docker.io")
	defer d.Stop(c)

	b.ResetCounters()
	ins := d.Wharf(c, "inspect", "--remote", "app:1.0")
	pull := d.Wharf(c, "pull", "app:1.0")
	c.Check(ins.ExitCode, check.Not(check.Equals), 0, check.Commentf("inspect --remote answered from B:\n%s", ins))
	c.Check(pull.ExitCode, check.Not(check.Equals), 0, check.Commentf("pull answered from B:\n%s", pull))
	c.Check(ins.Stderr, check.Matches, `(?s).*`+regexpQuote(a.Host)+`.*`, check.Commentf("inspect: the refusal must name A\n%s", ins))
	c.Check(pull.Stderr, check.Matches, `(?s).*`+regexpQuote(a.Host)+`.*`, check.Commentf("pull: the refusal must name A\n%s", pull))
	c.Check(b.RequestLog(), check.HasLen, 0, check.Commentf("B was asked although A refused"))
}

// rsRaw is GET /images/NAME/json?remote=1&raw=1.
func rsRaw(c *check.C, d *Daemon, name, authHdr string) Response {
	return rsRemote(c, d, name, authHdr, "raw=1")
}

// checkRaw checks a raw answer is the document as the registry serves it.
// It asks the registry itself (through its counter): callers take the
// request log first.
func checkRaw(c *check.C, reg *testregistry.Registry, r Response, repo, ref string, want testregistry.Blob) {
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("raw %s:%s: %s", repo, ref, r))
	c.Check(string(r.Body), check.Equals, string(want.Data), check.Commentf("raw %s:%s: not the bytes as served", repo, ref))
	c.Check(r.Header.Get("Content-Type"), check.Equals, want.MediaType)
	ctx, cancel := fixtureCtx()
	defer cancel()
	_, _, served, err := reg.Client().GetManifest(ctx, repo, ref)
	c.Assert(err, check.IsNil)
	c.Check(served, check.Equals, want.Digest)
	c.Check(r.Header.Get("Docker-Content-Digest"), check.Equals, served, check.Commentf("raw %s:%s: not the registry's digest", repo, ref))
}

// Finding 4: --raw is the top document exactly as served, in its own
// budget (cold ≤ 3 with a token, warm 1 HEAD), with the registry's digest;
// an index without the daemon's platform is answered, not 404.
// The CNCF registry refuses manifests pushed by a sha512 digest
// (DIGEST_INVALID), so the digest is checked on sha256 references.
func (s *ResolveSuite) TestRawAnswersTopDocumentAsServed(c *check.C) {
	if runtime.GOARCH == "s390x" || runtime.GOARCH == "ppc64le" {
		c.Skip("the foreign index is s390x/ppc64le")
	}
	reg := s.regs.token
	single := pushImage(c, reg, "raw/single", "1.0", testregistry.ImageOptions{})
	foreign := pushIndex(c, reg, "raw/foreign", "1.0", testregistry.IndexOptions{Platforms: []ocispec.Platform{
		{OS: "linux", Architecture: "s390x"}, {OS: "linux", Architecture: "ppc64le"},
	}})
	d := StartDaemon(c) // cold
	defer d.Stop(c)
	a := auth(reg)

	reg.ResetCounters()
	r := rsRaw(c, d, reg.Host+"/raw/single:1.0", a)
	log := reg.RequestLog()
	checkRaw(c, reg, r, "raw/single", "1.0", single.Manifest)
	c.Logf("cold raw: %v", log)
	c.Check(len(log) <= 3, check.Equals, true, check.Commentf("cold --raw made %d requests: %v", len(log), log))

	reg.ResetCounters()
	r = rsRaw(c, d, reg.Host+"/raw/single:1.0", a)
	log = reg.RequestLog()
	checkRaw(c, reg, r, "raw/single", "1.0", single.Manifest)
	c.Check(log, check.DeepEquals, []string{"HEAD /v2/raw/single/manifests/1.0"}, check.Commentf("warm --raw"))

	// An index with no entry for the daemon's platform: nothing below the top is read.
	reg.ResetCounters()
	r = rsRaw(c, d, reg.Host+"/raw/foreign:1.0", a)
	log = reg.RequestLog()
	checkRaw(c, reg, r, "raw/foreign", "1.0", foreign.Index)
	c.Check(len(log) <= 3, check.Equals, true, check.Commentf("--raw of a new repository made %d requests: %v", len(log), log))
	c.Check(reg.Counter.Count("GET blobs"), check.Equals, 0, check.Commentf("%v", log))
	for _, l := range log {
		for _, im := range foreign.Images {
			c.Check(strings.Contains(l, im.Manifest.Digest), check.Equals, false, check.Commentf("--raw read a platform manifest: %v", log))
		}
	}
	reg.ResetCounters()
	r = rsRaw(c, d, reg.Host+"/raw/foreign:1.0", a)
	log = reg.RequestLog()
	checkRaw(c, reg, r, "raw/foreign", "1.0", foreign.Index)
	c.Check(log, check.DeepEquals, []string{"HEAD /v2/raw/foreign/manifests/1.0"}, check.Commentf("warm --raw of an index"))

	// By digest, and through the CLI.
	r = rsRaw(c, d, reg.Host+"/raw/foreign@"+foreign.Digest(), a)
	checkRaw(c, reg, r, "raw/foreign", foreign.Digest(), foreign.Index)
	login := d.WharfIn(c, []byte(reg.Password+"\n"), "login", reg.Host, "-u", reg.Username, "--password-stdin")
	c.Assert(login.ExitCode, check.Equals, 0, check.Commentf("%s", login))
	out := d.Wharf(c, "inspect", "--remote", "--raw", reg.Host+"/raw/foreign:1.0")
	c.Check(out.ExitCode, check.Equals, 0, check.Commentf("%s", out))
	c.Check(strings.TrimSuffix(out.Stdout, "\n"), check.Equals, string(foreign.Index.Data))

	// A whole inspect of that index still says which platforms there are.
	r = rsRemote(c, d, reg.Host+"/raw/foreign:1.0", a, "")
	c.Check(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s", r))
	c.Check(r.Message(), check.Matches, `(?s).*linux/s390x.*`)
}

// Finding 5a: a registry's malformed manifest is the registry's fault: 502,
// not 400.
func (s *ResolveSuite) TestMalformedManifestIsBadGateway(c *check.C) {
	h, err := hostile.Start(hostile.Options{})
	c.Assert(err, check.IsNil)
	defer h.Close()
	h.ServeManifest(ocispec.MediaTypeImageManifest, []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":`))
	d := StartDaemon(c)
	defer d.Stop(c)

	for _, p := range []string{
		"/v1.50/images/" + h.Ref() + "/json?remote=1",
		"/v1.50/images/" + h.Ref() + "/json?remote=1&raw=1",
		"/v1.50/distribution/" + h.Ref() + "/json",
	} {
		r := d.Get(c, p)
		c.Check(r.Status, check.Equals, http.StatusBadGateway, check.Commentf("%s: %s", p, r))
		c.Check(r.Message(), check.Matches, `(?s).*`+regexpQuote(h.Host)+`.*`, check.Commentf("%s: the error must name the registry", p))
	}
	// A pull of it is refused before the stream starts, in the same class.
	pr, _ := d.Pull(c, h.Name(), h.Tag, "")
	c.Check(pr.Status, check.Equals, http.StatusBadGateway, check.Commentf("pull: %s", pr))
	c.Check(pr.Message(), check.Matches, `(?s).*`+regexpQuote(h.Host)+`.*`, check.Commentf("pull: %s", pr))
	c.Check(h.Count(hostile.KindManifest) >= 1, check.Equals, true)
}

// dockerResult is a docker CLI run bounded by a deadline.
type dockerResult struct {
	Result
	TimedOut bool
	Took     time.Duration
}

// dockerPullBounded runs `docker pull ref` against d with stdin from
// /dev/null (not a terminal) and gives up after 30 s: the docker CLI
// answers a daemon's 401 on pull by prompting for a username, which never
// ends on a non-terminal.
func dockerPullBounded(c *check.C, d *Daemon, ref string) dockerResult {
	bin := dockerPath(c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "pull", ref)
	cmd.Env = append(os.Environ(), d.cliEnv()...)
	devnull, err := os.Open(os.DevNull)
	c.Assert(err, check.IsNil)
	defer devnull.Close()
	cmd.Stdin = devnull
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err = cmd.Run()
	res := dockerResult{Result: Result{Cmd: "docker pull " + ref, Stdout: out.String(), Stderr: errb.String()}, Took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		res.TimedOut, res.ExitCode = true, -1
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	default:
		c.Fatalf("%s: %v", res.Cmd, err)
	}
	return res
}

// writeDockerAuth stores user:password for host in the docker CLI's config
// of d (what a stale `docker login` leaves).
func writeDockerAuth(c *check.C, d *Daemon, host, user, password string) {
	dir := filepath.Join(d.Home, ".docker")
	c.Assert(os.MkdirAll(dir, 0o700), check.IsNil)
	cfg := map[string]any{"auths": map[string]any{host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}}}
	b, err := json.Marshal(cfg)
	c.Assert(err, check.IsNil)
	c.Assert(os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600), check.IsNil)
}

// Finding 5b: a pull refused by the registry is never 401 (the docker CLI
// would prompt for a password and hang): without credentials 404 "pull
// access denied for …", with wrong ones 500; the docker CLI 28 exits.
func (s *ResolveSuite) TestRefusedPullIsNeverUnauthorized(c *check.C) {
	for _, reg := range []*testregistry.Registry{s.regs.basic, s.regs.token} {
		pushImage(c, reg, "team/locked", "1.0", testregistry.ImageOptions{})
		name := reg.Host + "/team/locked"
		d := StartDaemon(c)

		r, _ := d.Pull(c, name, "1.0", "")
		c.Check(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s registry, no credentials: %s", reg.Auth, r))
		c.Check(r.Message(), check.Matches, `pull access denied for `+regexpQuote(name)+`, repository does not exist or may require 'docker login'.*`,
			check.Commentf("%s registry, no credentials", reg.Auth))

		r, _ = d.Pull(c, name, "1.0", RegistryAuth(reg.Username, "wrong-password", reg.Host))
		c.Check(r.Status, check.Equals, http.StatusInternalServerError, check.Commentf("%s registry, wrong credentials: %s", reg.Auth, r))
		c.Check(strings.Contains(string(r.Body), "wrong-password"), check.Equals, false)

		res := dockerPullBounded(c, d, name+":1.0")
		c.Check(res.TimedOut, check.Equals, false, check.Commentf("%s registry: docker pull without credentials hung (%s)\n%s", reg.Auth, res.Took, res.Result))
		c.Check(res.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", res.Result))
		c.Check(res.Stderr, check.Matches, `(?s).*pull access denied for `+regexpQuote(name)+`.*`, check.Commentf("%s", res.Result))
		c.Check(res.Stdout+res.Stderr, check.Not(check.Matches), `(?s).*Username.*`, check.Commentf("%s", res.Result))
		c.Logf("%s registry, no credentials, %s: %s", reg.Auth, res.Took, res.Stderr)

		writeDockerAuth(c, d, reg.Host, reg.Username, "wrong-password")
		res = dockerPullBounded(c, d, name+":1.0")
		c.Check(res.TimedOut, check.Equals, false, check.Commentf("%s registry: docker pull with wrong credentials hung (%s)\n%s", reg.Auth, res.Took, res.Result))
		c.Check(res.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", res.Result))
		c.Check(res.Stdout+res.Stderr, check.Not(check.Matches), `(?s).*Username.*`, check.Commentf("%s", res.Result))
		c.Logf("%s registry, wrong credentials, %s: %s", reg.Auth, res.Took, res.Stderr)

		c.Check(d.Get(c, "/v1.50/images/"+name+":1.0/json").Status, check.Equals, http.StatusNotFound)
		d.Stop(c)
	}
}
