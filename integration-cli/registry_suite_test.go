package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// RegistrySuite moves images between wharfd and real distribution registries:
// anonymous, htpasswd basic, token auth, and a pull-through cache.
type RegistrySuite struct {
	suiteFixture
	regs *registries
	d    *Daemon
}

func TestRegistrySuite(t *testing.T) { t.Parallel(); runSuite(t, &RegistrySuite{}) }

func (s *RegistrySuite) SetUpSuite(c *check.C) {
	s.regs = s.startRegistries(c)
	s.d = s.startDaemon(c)
}

func (s *RegistrySuite) TestImportPushRmiPullKeepsIDAndDigests(c *check.C) {
	for _, reg := range []*testregistry.Registry{s.regs.anon, s.regs.basic, s.regs.token} {
		name := reg.Host + "/roundtrip/app"
		id := s.d.Import(c, name+":1.0", "LABEL mode="+reg.Auth.String())
		r, lines := s.d.Push(c, name, "1.0", auth(reg))
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s push: %s", reg.Auth, r))
		c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s push: %s", reg.Auth, r.Body))
		aux := lines.Aux()
		c.Assert(aux, check.NotNil, check.Commentf("push stream has no aux: %s", r.Body))
		c.Assert(aux["Tag"], check.Equals, "1.0")
		dgst, _ := aux["Digest"].(string)
		c.Assert(dgst, check.Matches, `sha256:[0-9a-f]{64}`)
		c.Assert(lines.Has("1.0: digest: "+dgst+" size: "), check.Equals, true, check.Commentf("%s", r.Body))
		before := s.d.Inspect(c, name+":1.0")
		c.Assert(before["RepoDigests"], check.DeepEquals, []any{name + "@" + dgst})

		// The registry holds exactly what the aux message says.
		ctx, cancel := fixtureCtx()
		_, _, served, err := reg.Client().GetManifest(ctx, "roundtrip/app", "1.0")
		cancel()
		c.Assert(err, check.IsNil)
		c.Assert(served, check.Equals, dgst)

		c.Assert(s.d.Req(c, http.MethodDelete, "/v1.50/images/"+name+":1.0", nil).Status, check.Equals, 200)
		c.Assert(s.d.Get(c, "/v1.50/images/"+id+"/json").Status, check.Equals, http.StatusNotFound)

		r, lines = s.d.Pull(c, name, "1.0", auth(reg))
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s pull: %s", reg.Auth, r))
		c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s pull: %s", reg.Auth, r.Body))
		c.Assert(lines.Has("Digest: "+dgst), check.Equals, true, check.Commentf("%s", r.Body))
		c.Assert(lines.Has("Status: Downloaded newer image for "+name+":1.0"), check.Equals, true, check.Commentf("%s", r.Body))
		after := s.d.Inspect(c, name+":1.0")
		c.Assert(after["Id"], check.Equals, id)
		for _, k := range []string{"RepoDigests", "RootFS", "Config", "Size", "Created", "Descriptor"} {
			c.Check(after[k], check.DeepEquals, before[k], check.Commentf("%s after push/rmi/pull", k))
		}
		// Again: up to date.
		_, lines = s.d.Pull(c, name, "1.0", auth(reg))
		c.Assert(lines.Has("Status: Image is up to date for "+name+":1.0"), check.Equals, true, check.Commentf("%v", lines.Texts()))
	}
}

func (s *RegistrySuite) TestPullMultiPlatformIndexWithPlatform(c *check.C) {
	for _, docker := range []bool{false, true} {
		repo := fmt.Sprintf("multi/pull-%v", docker)
		ix := pushIndex(c, s.regs.anon, repo, "1.0", testregistry.IndexOptions{Docker: docker, Attestation: !docker})
		name := s.regs.anon.Host + "/" + repo
		r, lines := s.d.Pull(c, name, "1.0", "", "platform", "linux/arm64")
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
		c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s", r.Body))
		c.Assert(lines.Has("Digest: "+ix.Digest()), check.Equals, true, check.Commentf("%s", r.Body))
		m := s.d.Inspect(c, name+":1.0")
		c.Assert(m["Id"], check.Equals, ix.Images[1].ID())
		c.Assert(m["Architecture"], check.Equals, "arm64")
		c.Assert(m["Variant"], check.Equals, "v8")
		c.Assert(m["RepoDigests"], check.DeepEquals, []any{name + "@" + ix.Digest()})

		r, lines = s.d.Pull(c, name, "1.0", "", "platform", "windows/s390x")
		msg := r.Message()
		if r.Status == http.StatusOK {
			msg = lines.Err()
		}
		c.Assert(msg, check.Matches, `(?s).*no matching manifest for windows/s390x.*`, check.Commentf("%s", r))
	}
}

func (s *RegistrySuite) TestPullByDigest(c *check.C) {
	img := pushImage(c, s.regs.anon, "bydigest/app", "1.0", testregistry.ImageOptions{})
	name := s.regs.anon.Host + "/bydigest/app"
	r, lines := s.d.Pull(c, name, img.Manifest.Digest, "")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s", r.Body))
	m := s.d.Inspect(c, name+"@"+img.Manifest.Digest)
	c.Assert(m["Id"], check.Equals, img.ID())
	c.Assert(m["RepoTags"], check.DeepEquals, []any{})
	c.Assert(m["RepoDigests"], check.DeepEquals, []any{name + "@" + img.Manifest.Digest})
}

func (s *RegistrySuite) TestPullAllTags(c *check.C) {
	a := pushImage(c, s.regs.anon, "alltags/app", "a", testregistry.ImageOptions{})
	b := pushImage(c, s.regs.anon, "alltags/app", "b", testregistry.ImageOptions{})
	name := s.regs.anon.Host + "/alltags/app"
	r, lines := s.d.Pull(c, name, "", "")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s", r.Body))
	c.Assert(s.d.Inspect(c, name+":a")["Id"], check.Equals, a.ID())
	c.Assert(s.d.Inspect(c, name+":b")["Id"], check.Equals, b.ID())
}

func (s *RegistrySuite) TestPushToSecondRepositoryMountsBlobs(c *check.C) {
	for _, reg := range []*testregistry.Registry{s.regs.anon, s.regs.token} {
		first := reg.Host + "/mount/first"
		s.d.Import(c, first+":1")
		r, lines := s.d.Push(c, first, "1", auth(reg))
		c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s", r))
		ctx, cancel := fixtureCtx()
		body, _, _, err := reg.Client().GetManifest(ctx, "mount/first", "1")
		cancel()
		c.Assert(err, check.IsNil)
		var m struct{ Layers []struct{ Digest string } }
		c.Assert(json.Unmarshal(body, &m), check.IsNil)
		c.Assert(len(m.Layers) > 0, check.Equals, true)

		second := reg.Host + "/mount/second"
		c.Assert(s.d.Req(c, http.MethodPost, "/v1.50/images/"+first+":1/tag?repo="+second+"&tag=1", nil).Status, check.Equals, 201)
		reg.ResetCounters()
		r, lines = s.d.Push(c, second, "1", auth(reg))
		c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s", r))
		c.Assert(lines.Has("Mounted from mount/first"), check.Equals, true, check.Commentf("%s push: %s", reg.Auth, r.Body))
		// Layers must be mounted, not uploaded (dockerd uploads the small
		// config blob the ordinary way, and so may wharf).
		for _, req := range reg.Counter.Requests() {
			if !strings.HasPrefix(req, "PUT ") && !strings.HasPrefix(req, "PATCH ") {
				continue
			}
			for _, l := range m.Layers {
				c.Check(strings.Contains(req, url.QueryEscape(l.Digest)) || strings.Contains(req, l.Digest), check.Equals, false,
					check.Commentf("%s: layer %s was uploaded instead of mounted: %v", reg.Auth, l.Digest, reg.RequestLog()))
			}
			c.Check(strings.Contains(req, "/blobs/uploads/"), check.Equals, !strings.Contains(req, "/manifests/"))
		}
		mounts := 0
		for _, req := range reg.Counter.Requests() {
			if strings.HasPrefix(req, "POST ") && strings.Contains(req, "mount=") && (strings.Contains(req, "from=mount%2Ffirst") || strings.Contains(req, "from=mount/first")) {
				mounts++
			}
		}
		c.Assert(mounts >= len(m.Layers), check.Equals, true, check.Commentf("%s: no mount request per layer: %v", reg.Auth, reg.RequestLog()))
	}
}

func (s *RegistrySuite) TestLoginWithWrongPasswordIs401WithClearMessage(c *check.C) {
	for _, reg := range []*testregistry.Registry{s.regs.basic, s.regs.token} {
		body := fmt.Sprintf(`{"username":%q,"password":"wrong-password","serveraddress":%q}`, reg.Username, reg.Host)
		r := s.d.Req(c, http.MethodPost, "/v1.50/auth", strings.NewReader(body), "Content-Type", "application/json")
		c.Check(r.Status, check.Equals, http.StatusUnauthorized, check.Commentf("%s: %s", reg.Auth, r))
		c.Check(r.Message(), check.Matches, `(?i).*(unauthorized|incorrect username or password|401).*`, check.Commentf("%s", reg.Auth))

		body = fmt.Sprintf(`{"username":%q,"password":%q,"serveraddress":%q}`, reg.Username, reg.Password, reg.Host)
		r = s.d.Req(c, http.MethodPost, "/v1.50/auth", strings.NewReader(body), "Content-Type", "application/json")
		c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: %s", reg.Auth, r))
		c.Check(string(r.Body), check.Matches, `(?s).*"Status":"Login Succeeded".*`)

		r, lines := s.d.Pull(c, reg.Host+"/roundtrip/app", "1.0", RegistryAuth(reg.Username, "wrong-password", reg.Host))
		msg := r.Message()
		if r.Status == http.StatusOK {
			msg = lines.Err()
		}
		c.Check(msg, check.Matches, `(?i).*(unauthorized|authentication required|incorrect).*`, check.Commentf("%s pull, wrong password: %s", reg.Auth, r))
	}
}

func (s *RegistrySuite) TestNoCredentialsOnAuthRegistryGivesClearError(c *check.C) {
	for _, reg := range []*testregistry.Registry{s.regs.basic, s.regs.token} {
		pushImage(c, reg, "private/app", "1.0", testregistry.ImageOptions{})
		r, lines := s.d.Pull(c, reg.Host+"/private/app", "1.0", "")
		msg := r.Message()
		if r.Status == http.StatusOK {
			msg = lines.Err()
		}
		c.Check(msg, check.Matches, `(?i).*(unauthorized|authentication required|no basic auth credentials|access to the requested resource).*`,
			check.Commentf("%s pull without credentials: %s", reg.Auth, r))
		s.d.Import(c, reg.Host+"/private/pushed:1")
		r, lines = s.d.Push(c, reg.Host+"/private/pushed", "1", "")
		msg = r.Message()
		if r.Status == http.StatusOK {
			msg = lines.Err()
		}
		c.Check(msg, check.Matches, `(?i).*(unauthorized|authentication required|no basic auth credentials).*`,
			check.Commentf("%s push without credentials: %s", reg.Auth, r))
	}
}

func (s *RegistrySuite) TestRegistryDownGivesClearErrorAndDaemonStaysUp(c *check.C) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, check.IsNil)
	down := l.Addr().String()
	l.Close() // nothing listens there now
	r, lines := s.d.Pull(c, down+"/gone/app", "1.0", "")
	msg := r.Message()
	if r.Status == http.StatusOK {
		msg = lines.Err()
	}
	c.Check(msg, check.Matches, `(?i).*(connection refused|unreachable|dial).*`, check.Commentf("%s", r))
	c.Check(strings.Contains(msg, down), check.Equals, true, check.Commentf("the error should name %s: %s", down, msg))
	ri := s.d.Get(c, "/v1.50/images/"+down+"/gone/app:1.0/json?remote=1")
	c.Assert(ri.Status >= 500 || ri.Status == http.StatusNotFound, check.Equals, true, check.Commentf("%s", ri))
	c.Assert(ri.Message(), check.Matches, `(?i).*(connection refused|unreachable|dial).*`)
	c.Assert(s.d.Get(c, "/_ping").Status, check.Equals, http.StatusOK)
}

func (s *RegistrySuite) TestRegistryMirrorServesDockerHubNames(c *check.C) {
	upstream, err := testregistry.Start(testregistry.Options{})
	c.Assert(err, check.IsNil)
	defer upstream.Close()
	img := pushImage(c, upstream, "library/mirrored", "latest", testregistry.ImageOptions{})
	mirror, err := testregistry.Start(testregistry.Options{ProxyRemoteURL: upstream.DirectURL})
	c.Assert(err, check.IsNil)
	defer mirror.Close()
	d := StartDaemon(c, "--registry-mirror", mirror.URL)
	defer d.Stop(c)
	r, lines := d.Pull(c, "mirrored", "latest", "")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s\n%s", r.Body, logTail(d)))
	m := d.Inspect(c, "mirrored:latest")
	c.Assert(m["Id"], check.Equals, img.ID())
	c.Assert(m["RepoDigests"], check.DeepEquals, []any{"mirrored@" + img.Manifest.Digest})
	c.Assert(mirror.Counter.Count("GET manifests")+mirror.Counter.Count("HEAD manifests") > 0, check.Equals, true,
		check.Commentf("the mirror saw no manifest request: %v", mirror.RequestLog()))
	var info struct{ RegistryConfig struct{ Mirrors []string } }
	d.Get(c, "/v1.50/info").JSON(c, &info)
	c.Assert(strings.Join(info.RegistryConfig.Mirrors, " "), check.Matches, `.*`+regexpQuote(mirror.Host)+`.*`)
}

func (s *RegistrySuite) TestAddRegistrySearchesShortNames(c *check.C) {
	img := pushImage(c, s.regs.anon, "short/pulled", "1.0", testregistry.ImageOptions{})
	d := StartDaemon(c, "--add-registry", s.regs.anon.Host)
	defer d.Stop(c)
	r, lines := d.Pull(c, "short/pulled", "1.0", "")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s", r.Body))
	m := d.Inspect(c, s.regs.anon.Host+"/short/pulled:1.0")
	c.Assert(m["Id"], check.Equals, img.ID())
}

func (s *RegistrySuite) TestBlockedRegistryIsRefused(c *check.C) {
	pushImage(c, s.regs.anon, "blocked/app", "1.0", testregistry.ImageOptions{})
	d := StartDaemon(c, "--block-registry", s.regs.anon.Host)
	defer d.Stop(c)
	s.regs.anon.ResetCounters()
	r, lines := d.Pull(c, s.regs.anon.Host+"/blocked/app", "1.0", "")
	msg := r.Message()
	if r.Status == http.StatusOK {
		msg = lines.Err()
	} else {
		c.Check(r.Status, check.Equals, http.StatusForbidden, check.Commentf("%s", r))
	}
	c.Assert(msg, check.Matches, `(?i).*blocked.*`, check.Commentf("%s", r))
	ri := d.Get(c, "/v1.50/images/"+s.regs.anon.Host+"/blocked/app:1.0/json?remote=1")
	c.Assert(ri.Status, check.Equals, http.StatusForbidden, check.Commentf("%s", ri))
	c.Assert(s.regs.anon.Counter.Total(), check.Equals, 0, check.Commentf("a blocked registry was contacted: %v", s.regs.anon.RequestLog()))
}

func (s *RegistrySuite) TestCredentialsNeverAppearInDaemonLog(c *check.C) {
	d := StartDaemon(c)
	for _, reg := range []*testregistry.Registry{s.regs.basic, s.regs.token} {
		hdr := auth(reg)
		name := reg.Host + "/logcheck/app"
		d.Import(c, name+":1")
		// Every operation must really reach the registry with the
		// credentials, or the log check below proves nothing.
		reg.ResetCounters()
		r, lines := d.Push(c, name, "1", hdr)
		c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("push: %s", r))
		c.Check(lines.Err(), check.Equals, "")
		r, lines = d.Pull(c, name, "1", hdr)
		c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("pull: %s", r))
		c.Check(lines.Err(), check.Equals, "")
		ri := d.Get(c, "/v1.50/images/"+name+":1/json?remote=1", "X-Registry-Auth", hdr)
		c.Check(ri.Status, check.Equals, http.StatusOK, check.Commentf("remote inspect: %s", ri))
		c.Check(reg.Counter.Total() > 0, check.Equals, true)
		d.Get(c, "/v1.50/distribution/"+name+":1/json", "X-Registry-Auth", hdr)
		body := fmt.Sprintf(`{"username":%q,"password":%q,"serveraddress":%q}`, reg.Username, reg.Password, reg.Host)
		d.Req(c, http.MethodPost, "/v1.50/auth", strings.NewReader(body), "Content-Type", "application/json")
		d.Pull(c, name, "1", RegistryAuth(reg.Username, reg.Password+"-wrong", reg.Host))
	}
	d.Stop(c)
	log := d.Log()
	c.Assert(len(log) > 0, check.Equals, true, check.Commentf("-D produced no log at all"))
	for _, reg := range []*testregistry.Registry{s.regs.basic, s.regs.token} {
		for what, secret := range map[string]string{
			"password":        reg.Password,
			"X-Registry-Auth": auth(reg),
			"basic header":    base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password)),
		} {
			c.Check(strings.Contains(log, secret), check.Equals, false, check.Commentf("wharfd logged the %s (%s registry)", what, reg.Auth))
		}
	}
}

func (s *RegistrySuite) TestPullMissingRepositoryOrTagIs404(c *check.C) {
	pushImage(c, s.regs.anon, "present/app", "1.0", testregistry.ImageOptions{})
	for _, ref := range [][2]string{{"nosuch/repo", "1.0"}, {"present/app", "nope"}} {
		name := s.regs.anon.Host + "/" + ref[0]
		r, _ := s.d.Pull(c, name, ref[1], "")
		c.Check(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s:%s: %s", name, ref[1], r))
		c.Check(r.Message(), check.Matches, `manifest for `+regexpQuote(name+":"+ref[1])+` not found.*`)
	}
}

func (s *RegistrySuite) TestPushOfMissingLocalImageFailsInStream(c *check.C) {
	name := s.regs.anon.Host + "/nosuchlocal/app"
	r, lines := s.d.Push(c, name, "1.0", "")
	msg := r.Message()
	if r.Status == http.StatusOK {
		msg = lines.Err()
	}
	c.Assert(msg, check.Matches, `.*(An image does not exist locally with the tag: |No such image: )`+regexpQuote(name)+`.*`, check.Commentf("%s", r))
}

func (s *RegistrySuite) TestPullRejectsLayerNotMatchingItsDigest(c *check.C) {
	reg := s.regs.anon
	img := pushImage(c, reg, "corrupt/layer", "1.0", testregistry.ImageOptions{})
	c.Assert(reg.CorruptBlob(img.Layers[0].Digest), check.IsNil)
	name := reg.Host + "/corrupt/layer"
	r, lines := s.d.Pull(c, name, "1.0", "")
	msg := r.Message()
	if r.Status == http.StatusOK {
		msg = lines.Err()
	}
	c.Assert(msg, check.Matches, `(?i).*(digest|verif|mismatch|checksum).*`, check.Commentf("a corrupt layer was accepted: %s", r))
	c.Assert(s.d.Get(c, "/v1.50/images/"+name+":1.0/json").Status, check.Equals, http.StatusNotFound)
	c.Assert(s.d.Get(c, "/v1.50/images/"+img.ID()+"/json").Status, check.Equals, http.StatusNotFound)
}

// hasStatus reports whether a stream line has exactly this status and id.
func hasStatus(lines StreamLines, status, id string) bool {
	for _, m := range lines {
		if m["status"] == status && (id == "" || m["id"] == id) {
			return true
		}
	}
	return false
}

func (s *RegistrySuite) TestPullAndPushStreamsHaveDockerShape(c *check.C) {
	img := pushImage(c, s.regs.anon, "shape/app", "1.0", testregistry.ImageOptions{Layers: 2})
	name := s.regs.anon.Host + "/shape/app"
	d := StartDaemon(c)
	defer d.Stop(c)
	r, lines := d.Pull(c, name, "1.0", "")
	c.Assert(r.Status, check.Equals, http.StatusOK)
	c.Assert(r.Header.Get("Content-Type"), check.Equals, "application/json")
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s", r.Body))
	c.Check(hasStatus(lines, "Pulling from shape/app", "1.0"), check.Equals, true, check.Commentf("%s", r.Body))
	for _, l := range img.Layers {
		short := strings.TrimPrefix(l.Digest, "sha256:")[:12]
		c.Check(hasStatus(lines, "Pulling fs layer", short), check.Equals, true, check.Commentf("layer %s: %s", short, r.Body))
		c.Check(hasStatus(lines, "Pull complete", short), check.Equals, true, check.Commentf("layer %s: %s", short, r.Body))
	}
	c.Check(hasStatus(lines, "Digest: "+img.Manifest.Digest, ""), check.Equals, true)
	c.Check(hasStatus(lines, "Status: Downloaded newer image for "+name+":1.0", ""), check.Equals, true)

	second := s.regs.anon.Host + "/shape/copy"
	c.Assert(d.Req(c, http.MethodPost, "/v1.50/images/"+name+":1.0/tag?repo="+second+"&tag=x", nil).Status, check.Equals, 201)
	r, lines = d.Push(c, second, "x", "")
	c.Assert(r.Status, check.Equals, http.StatusOK)
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s", r.Body))
	c.Check(hasStatus(lines, "The push refers to repository ["+second+"]", ""), check.Equals, true, check.Commentf("%s", r.Body))
	for _, l := range img.Layers {
		short := strings.TrimPrefix(l.Digest, "sha256:")[:12]
		c.Check(hasStatus(lines, "Preparing", short), check.Equals, true, check.Commentf("layer %s: %s", short, r.Body))
	}
	aux := lines.Aux()
	c.Assert(aux, check.NotNil)
	c.Check(aux["Digest"], check.Equals, img.Manifest.Digest, check.Commentf("a pulled image must push back byte-identical"))
	c.Check(aux["Size"], check.Equals, float64(len(img.Manifest.Data)))
	c.Check(hasStatus(lines, fmt.Sprintf("x: digest: %s size: %d", img.Manifest.Digest, len(img.Manifest.Data)), ""), check.Equals, true)
}

func (s *RegistrySuite) TestPushAndPullLogEvents(c *check.C) {
	d := StartDaemon(c)
	defer d.Stop(c)
	since := time.Now().Add(-time.Second).Unix()
	name := s.regs.anon.Host + "/events/app"
	id := d.Import(c, name+":1")
	_, lines := d.Push(c, name, "1", "")
	c.Assert(lines.Err(), check.Equals, "")
	c.Assert(d.Req(c, http.MethodDelete, "/v1.50/images/"+name+":1", nil).Status, check.Equals, 200)
	_, lines = d.Pull(c, name, "1", "")
	c.Assert(lines.Err(), check.Equals, "")
	until := time.Now().Add(time.Second).Unix()
	r := d.Get(c, fmt.Sprintf("/v1.50/events?since=%d&until=%d&filters=%s", since, until, filtersQuery(map[string][]string{"event": {"push", "pull"}})))
	c.Assert(r.Status, check.Equals, http.StatusOK)
	// dockerd's shape: the actor is what was pushed or pulled (name:tag),
	// the "name" attribute its repository.
	got, actors := map[string]string{}, map[string]string{}
	for _, e := range r.Lines(c) {
		actor, _ := e["Actor"].(map[string]any)
		attrs, _ := actor["Attributes"].(map[string]any)
		got[fmt.Sprint(e["Action"])] = fmt.Sprint(attrs["name"])
		actors[fmt.Sprint(e["Action"])] = fmt.Sprint(actor["ID"])
	}
	for _, a := range []string{"push", "pull"} {
		c.Assert(got[a], check.Equals, name, check.Commentf("%s", r.Body))
		c.Assert(actors[a], check.Equals, name+":1", check.Commentf("%s", r.Body))
	}
	_ = id
}

func (s *RegistrySuite) TestPulledImageSurvivesRestart(c *check.C) {
	img := pushImage(c, s.regs.anon, "restart/app", "1.0", testregistry.ImageOptions{})
	name := s.regs.anon.Host + "/restart/app"
	d := StartDaemon(c)
	_, lines := d.Pull(c, name, "1.0", "")
	c.Assert(lines.Err(), check.Equals, "")
	before := d.Inspect(c, name+":1.0")
	d.Restart(c)
	defer d.Stop(c)
	after := d.Inspect(c, name+":1.0")
	c.Assert(after["Id"], check.Equals, img.ID())
	for _, k := range []string{"RepoTags", "RepoDigests", "RootFS", "Size", "Descriptor", "Config"} {
		c.Check(after[k], check.DeepEquals, before[k], check.Commentf("%s after restart", k))
	}
	_, lines = d.Pull(c, name, "1.0", "")
	c.Assert(hasStatus(lines, "Status: Image is up to date for "+name+":1.0", ""), check.Equals, true)
}

func (s *RegistrySuite) TestConcurrentPullsOfOneImageFetchEachLayerOnce(c *check.C) {
	reg := s.regs.anon
	img := pushImage(c, reg, "concurrent/app", "1.0", testregistry.ImageOptions{Layers: 3, LayerSize: 64 << 10})
	name := reg.Host + "/concurrent/app"
	d := StartDaemon(c)
	defer d.Stop(c)
	reg.ResetCounters()
	const n = 4
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		go func() {
			// Plain HTTP here: check.C must not be used off the test goroutine.
			req, _ := http.NewRequest(http.MethodPost, "http://wharfd/v1.50/images/create?fromImage="+url.QueryEscape(name)+"&tag=1.0", nil)
			resp, err := d.HTTPClient().Do(req)
			if err != nil {
				errs <- err.Error()
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "errorDetail") {
				errs <- fmt.Sprintf("%d %s", resp.StatusCode, body)
				return
			}
			errs <- ""
		}()
	}
	for i := 0; i < n; i++ {
		c.Check(<-errs, check.Equals, "")
	}
	for _, l := range img.Layers {
		gets := 0
		for _, req := range reg.Counter.Requests() {
			if strings.HasPrefix(req, "GET ") && strings.Contains(req, "/blobs/"+l.Digest) {
				gets++
			}
		}
		c.Check(gets, check.Equals, 1, check.Commentf("layer %s fetched %d times by %d concurrent pulls", l.Digest, gets, n))
	}
	c.Assert(d.Inspect(c, name+":1.0")["Id"], check.Equals, img.ID())
}
