package integration

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// CheckRemoteSuite is the update check (issue 12, part 1):
// `wharf images --check-remote` and POST /wharf/images/check-remote against
// the real registry with token auth, counted at its proxy.
type CheckRemoteSuite struct {
	suiteFixture
	tok, anon, dead *testregistry.Registry
	d               *Daemon

	moved, gone *testregistry.Image // cr/app:moved after the move; cr/app:gone before its delete
	ixSame      *testregistry.Index // cr/mp:same now: other platform changed only
	ixMoved     *testregistry.Index // cr/mp:moved now: the pulled platform changed
}

func TestCheckRemoteSuite(t *testing.T) { t.Parallel(); runSuite(t, &CheckRemoteSuite{}) }

// pulledPlatform is what the multi-platform fixtures are pulled for: the
// first platform of testregistry's default index.
var pulledPlatform = ocispec.Platform{OS: "linux", Architecture: "amd64"}

func (s *CheckRemoteSuite) SetUpSuite(c *check.C) {
	s.tok = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken})
	s.anon = s.startRegistry(c, testregistry.Options{})
	s.dead = s.startRegistry(c, testregistry.Options{})
	s.d = s.startDaemon(c)
	d, tok := s.d, s.tok
	login := d.WharfIn(c, []byte(tok.Password+"\n"), "login", tok.Host, "-u", tok.Username, "--password-stdin")
	c.Assert(login.ExitCode, check.Equals, 0, check.Commentf("%s", login))

	// What is pulled: four single-platform tags on two repositories, one
	// index under two tags, one image on each other registry.
	pushImage(c, tok, "cr/app", "moved", testregistry.ImageOptions{})
	pushImage(c, tok, "cr/app", "same", testregistry.ImageOptions{})
	s.gone = pushImage(c, tok, "cr/app", "gone", testregistry.ImageOptions{})
	pushImage(c, tok, "cr/other", "1", testregistry.ImageOptions{})
	ix := pushIndex(c, tok, "cr/mp", "same", testregistry.IndexOptions{})
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(tok.Client().PutManifest(ctx, "cr/mp", "moved", ix.Index), check.IsNil)
	pushImage(c, s.anon, "cr/anon", "1", testregistry.ImageOptions{})
	pushImage(c, s.dead, "cr/dead", "1", testregistry.ImageOptions{})
	a := auth(tok)
	for _, p := range []struct {
		reg             *testregistry.Registry
		name, tag, auth string
	}{
		{tok, "cr/app", "moved", a}, {tok, "cr/app", "same", a}, {tok, "cr/app", "gone", a}, {tok, "cr/other", "1", a},
		{tok, "cr/mp", "same", a}, {tok, "cr/mp", "moved", a},
		{s.anon, "cr/anon", "1", ""}, {s.dead, "cr/dead", "1", ""},
	} {
		r, lines := d.Pull(c, p.reg.Host+"/"+p.name, p.tag, p.auth, "platform", "linux/amd64")
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("pull %s:%s: %s", p.name, p.tag, r))
		c.Assert(lines.Err(), check.Equals, "", check.Commentf("pull %s:%s", p.name, p.tag))
	}
	d.Import(c, tok.Host+"/cr/imported:1") // never pulled nor pushed: local
	// A second tag of the dead registry's image, in the same repository.
	d.WharfOK(c, "tag", s.dead.Host+"/cr/dead:1", s.dead.Host+"/cr/dead:2")

	// What happened in the registries since.
	s.moved = pushImage(c, tok, "cr/app", "moved", testregistry.ImageOptions{})
	c.Assert(tok.Client().DeleteManifest(ctx, "cr/app", s.gone.Manifest.Digest), check.IsNil)
	s.ixSame = indexWith(c, ix.Images[0], nil) // the pulled platform's manifest, a new other one
	c.Assert(tok.Client().PushIndex(ctx, "cr/mp", "same", s.ixSame), check.IsNil)
	s.ixMoved = indexWith(c, nil, ix.Images[1]) // a new manifest for the pulled platform
	c.Assert(tok.Client().PushIndex(ctx, "cr/mp", "moved", s.ixMoved), check.IsNil)
	s.dead.Close() // its port now refuses connections
}

// indexWith is a two-platform index (linux/amd64, linux/arm64/v8) with the
// given images, new random ones where nil.
func indexWith(c *check.C, amd64, arm64 *testregistry.Image) *testregistry.Index {
	fresh, err := testregistry.NewIndex(testregistry.IndexOptions{})
	c.Assert(err, check.IsNil)
	imgs := []*testregistry.Image{amd64, arm64}
	for i := range imgs {
		if imgs[i] == nil {
			imgs[i] = fresh.Images[i]
		}
	}
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex}
	idx.SchemaVersion = 2
	for _, img := range imgs {
		d := img.Manifest.Descriptor()
		p := img.Platform
		d.Platform = &p
		idx.Manifests = append(idx.Manifests, d)
	}
	b, err := json.Marshal(idx)
	c.Assert(err, check.IsNil)
	return &testregistry.Index{Index: testregistry.NewBlob(ocispec.MediaTypeImageIndex, b), Images: imgs}
}

// checkRow is what a --format json line of `images --check-remote` carries.
type checkRow struct {
	Repository, Tag, ID                string
	Remote, RemoteStatus, RemoteDigest string
	RemoteError                        string
	PlatformChanged                    *bool
}

// checkJSON runs `wharf images --check-remote --format json ARGS…` and
// returns its rows by repository:tag.
func (s *CheckRemoteSuite) checkJSON(c *check.C, args ...string) (map[string]checkRow, Result) {
	res := s.d.Wharf(c, append([]string{"images", "--check-remote", "--format", "json"}, args...)...)
	rows := map[string]checkRow{}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if line == "" {
			continue
		}
		var r checkRow
		c.Assert(json.Unmarshal([]byte(line), &r), check.IsNil, check.Commentf("line %q of\n%s", line, res))
		rows[r.Repository+":"+r.Tag] = r
	}
	return rows, res
}

func (s *CheckRemoteSuite) TestCheckRemoteStatusesThroughTheCLI(c *check.C) {
	tok := s.tok
	s.anon.ResetCounters()
	rows, res := s.checkJSON(c)
	c.Assert(res.ExitCode, check.Equals, 0, check.Commentf("without --exit-code the answers do not set the status\n%s", res))
	row := func(name string) checkRow {
		r, ok := rows[name]
		c.Assert(ok, check.Equals, true, check.Commentf("no row for %s in\n%s", name, res))
		return r
	}
	t := tok.Host + "/cr/"

	moved := row(t + "app:moved")
	c.Check(moved.RemoteStatus, check.Equals, "outdated")
	c.Check(moved.RemoteDigest, check.Equals, s.moved.Manifest.Digest)
	c.Check(moved.PlatformChanged != nil && *moved.PlatformChanged, check.Equals, true)
	c.Check(row(t+"app:same").RemoteStatus, check.Equals, "current")
	c.Check(row(t+"other:1").RemoteStatus, check.Equals, "current")
	gone := row(t + "app:gone")
	c.Check(gone.RemoteStatus, check.Equals, "missing", check.Commentf("%+v", gone))
	c.Check(row(t+"imported:1").RemoteStatus, check.Equals, "local")
	c.Check(row(s.anon.Host+"/cr/anon:1").RemoteStatus, check.Equals, "current")
	dead := row(s.dead.Host + "/cr/dead:1")
	c.Check(dead.RemoteStatus, check.Equals, "error")
	c.Check(dead.RemoteError, check.Not(check.Equals), "")
	c.Check(res.Stderr, check.Matches, `(?s).*cr/dead:1: .+`, check.Commentf("a failed check is reported on stderr"))
	// Its other tag is not asked once the registry was found unreachable.
	dead2 := row(s.dead.Host + "/cr/dead:2")
	c.Check(dead2.RemoteStatus, check.Equals, "error")
	c.Check(strings.HasPrefix(dead.RemoteError, "not asked: ") != strings.HasPrefix(dead2.RemoteError, "not asked: "), check.Equals, true,
		check.Commentf("one of the dead registry's tags asked, the other not: %q, %q", dead.RemoteError, dead2.RemoteError))

	// The index moved under both tags; only one of them moved the platform
	// the image was pulled for.
	same, mvd := row(t+"mp:same"), row(t+"mp:moved")
	c.Check(same.RemoteStatus, check.Equals, "outdated")
	c.Check(same.RemoteDigest, check.Equals, s.ixSame.Digest())
	c.Check(same.PlatformChanged != nil && !*same.PlatformChanged, check.Equals, true, check.Commentf("%+v", same))
	c.Check(same.Remote, check.Equals, "outdated (platform unchanged)")
	c.Check(mvd.RemoteStatus, check.Equals, "outdated")
	c.Check(mvd.RemoteDigest, check.Equals, s.ixMoved.Digest())
	c.Check(mvd.PlatformChanged != nil && *mvd.PlatformChanged, check.Equals, true, check.Commentf("%+v", mvd))

	// The token registry's credential went to it alone.
	for _, h := range s.anon.Counter.HeaderValues("Authorization") {
		c.Check(h, check.Equals, "", check.Commentf("a credential reached the anonymous registry"))
	}
	c.Check(s.anon.Counter.Count("HEAD manifests"), check.Equals, 1)

	// The table has the REMOTE column.
	table := s.d.WharfOK(c, "images", "--check-remote", t+"app")
	c.Check(table.Stdout, check.Matches, `(?s)REPOSITORY +TAG +IMAGE ID +CREATED +SIZE +REMOTE\n.*`)
	c.Check(table.Stdout, check.Matches, `(?s).*cr/app +moved .* outdated\n.*`)
	c.Check(table.Stdout, check.Matches, `(?s).*cr/app +same .* current\n.*`)
	c.Check(table.Stdout, check.Not(check.Matches), `(?s).*cr/other.*`, check.Commentf("a name narrows the list"))
}

func (s *CheckRemoteSuite) TestCheckRemoteExitCode(c *check.C) {
	t := s.tok.Host + "/cr/"
	r := s.d.Wharf(c, "images", "--check-remote", "--exit-code")
	c.Check(r.ExitCode, check.Equals, 1, check.Commentf("outdated and missing images: exit 1\n%s", r))
	r = s.d.Wharf(c, "images", "--check-remote", "--exit-code", t+"app:same", t+"other:1", t+"imported")
	c.Check(r.ExitCode, check.Equals, 0, check.Commentf("current and local only: exit 0\n%s", r))
	r = s.d.Wharf(c, "images", "--check-remote", "--exit-code", s.dead.Host+"/cr/dead")
	c.Check(r.ExitCode, check.Equals, 2, check.Commentf("only a failed check: exit 2\n%s", r))
	r = s.d.Wharf(c, "images", "--exit-code")
	c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("--exit-code without --check-remote is refused\n%s", r))
}

// TestCheckRemoteRequestBudget: N tags cost N HEADs and at most one token
// per repository, cold or warm; a repeat within --max-age costs nothing.
func (s *CheckRemoteSuite) TestCheckRemoteRequestBudget(c *check.C) {
	tok := s.tok
	t := tok.Host + "/cr/"
	names := []string{t + "app:same", t + "app:moved", t + "other:1"}
	run := func(extra ...string) map[string]checkRow {
		rows, res := s.checkJSON(c, append(extra, names...)...)
		c.Assert(res.ExitCode, check.Equals, 0, check.Commentf("%s", res))
		c.Assert(rows, check.HasLen, len(names), check.Commentf("%s", res))
		return rows
	}
	// Tokens are POSTed (OAuth2, the scope in the body): at most one per
	// repository is at most one per repository checked.
	repos := 2 // cr/app, cr/other
	tokens := func() int { return tok.TokenCounter.Total() }

	// Warm (the daemon pulled these): one HEAD per tag, nothing else.
	run()
	tok.ResetCounters()
	rows := run()
	c.Check(rows[t+"app:same"].RemoteStatus, check.Equals, "current")
	c.Check(tok.Counter.Count("HEAD manifests"), check.Equals, len(names), check.Commentf("%v", tok.RequestLog()))
	c.Check(tok.Counter.Total(), check.Equals, len(names), check.Commentf("%v", tok.RequestLog()))
	c.Check(tokens(), check.Equals, 0, check.Commentf("the pull's tokens are still valid: %v", tok.RequestLog()))

	// Cold (new process: no token, no realm known): one challenge for the
	// registry, at most one token per repository, one HEAD per tag.
	s.d.Restart(c)
	tok.ResetCounters()
	run()
	c.Logf("cold: %v", tok.RequestLog())
	c.Check(tok.Counter.Count("HEAD manifests") <= len(names)+1, check.Equals, true, check.Commentf("%v", tok.RequestLog()))
	c.Check(tok.Counter.Count("GET manifests"), check.Equals, 0, check.Commentf("%v", tok.RequestLog()))
	c.Check(tokens() <= repos, check.Equals, true, check.Commentf("%d tokens for %d repositories: %v", tokens(), repos, tok.RequestLog()))

	// A repeat within --max-age: no request at all, same answers.
	tok.ResetCounters()
	again := run("--max-age", "10m")
	c.Check(tok.RequestLog(), check.HasLen, 0)
	for _, n := range names {
		c.Check(again[n].RemoteStatus, check.Equals, rows[n].RemoteStatus, check.Commentf("%s", n))
		c.Check(again[n].RemoteDigest, check.Equals, rows[n].RemoteDigest, check.Commentf("%s", n))
	}
	// … and without it, the registry is asked again.
	run()
	c.Check(tok.Counter.Count("HEAD manifests"), check.Equals, len(names))
}

// TestCheckRemoteAPI: the stream, its errors, and credentials bound to
// their registry.
func (s *CheckRemoteSuite) TestCheckRemoteAPI(c *check.C) {
	tok := s.tok
	name := tok.Host + "/cr/app:same"
	path := "/v1.50/wharf/images/check-remote?name=" + url.QueryEscape(name)
	r := s.d.Req(c, http.MethodPost, path, nil, "X-Registry-Auth", auth(tok))
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Check(r.Header.Get("Content-Type"), check.Equals, "application/x-ndjson")
	lines := r.Lines(c)
	c.Assert(lines, check.HasLen, 1, check.Commentf("%s", r))
	c.Check(lines[0]["RemoteStatus"], check.Equals, "current")
	c.Check(lines[0]["Repository"], check.Equals, tok.Host+"/cr/app")
	c.Check(lines[0]["Tag"], check.Equals, "same")
	c.Check(lines[0]["LocalDigest"], check.Equals, lines[0]["RemoteDigest"])

	// Unversioned too, and several names; one without a tag is every tag.
	r = s.d.Req(c, http.MethodPost, "/wharf/images/check-remote?name="+url.QueryEscape(tok.Host+"/cr/app")+"&name="+url.QueryEscape(tok.Host+"/cr/other"), nil, "X-Registry-Auth", auth(tok))
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Check(r.Lines(c), check.HasLen, 4, check.Commentf("%s", r))

	// A credential that does not name its registry is not used: the
	// private registry then refuses the anonymous check.
	noServer := RegistryAuth(tok.Username, tok.Password, "")
	r = s.d.Req(c, http.MethodPost, path, nil, "X-Registry-Auth", noServer)
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Check(r.Lines(c)[0]["RemoteStatus"], check.Equals, "error", check.Commentf("%s", r))

	r = s.d.Req(c, http.MethodPost, "/v1.50/wharf/images/check-remote?name=no/such:image", nil)
	c.Check(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s", r))
	c.Check(r.Message(), check.Equals, "No such image: no/such:image")
	r = s.d.Req(c, http.MethodPost, "/v1.50/wharf/images/check-remote?max-age=soon", nil)
	c.Check(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s", r))
	r = s.d.Req(c, http.MethodPost, "/v1.50/wharf/images/check-remote?max-age=-1s", nil)
	c.Check(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s", r))
}
