package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/check.v1"
)

// APISuite drives wharfd's Engine API with plain net/http over the socket.
// One daemon serves the suite; tests use their own repository names.
type APISuite struct {
	suiteFixture
	d *Daemon
}

func TestAPISuite(t *testing.T) { t.Parallel(); runSuite(t, &APISuite{}) }

func (s *APISuite) SetUpSuite(c *check.C) { s.d = s.startDaemon(c) }
func filtersQuery(f map[string][]string) string {
	m := map[string]map[string]bool{}
	for k, vs := range f {
		m[k] = map[string]bool{}
		for _, v := range vs {
			m[k][v] = true
		}
	}
	b, _ := json.Marshal(m)
	return url.QueryEscape(string(b))
}

type summary struct {
	Id          string
	RepoTags    []string
	RepoDigests []string
	Created     int64
	Size        int64
	Labels      map[string]string
}

func (s *APISuite) list(c *check.C, query string) []summary {
	r := s.d.Get(c, "/v1.50/images/json"+query)
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	var out []summary
	r.JSON(c, &out)
	return out
}

func ids(list []summary) []string {
	var out []string
	for _, s := range list {
		out = append(out, s.Id)
	}
	sort.Strings(out)
	return out
}

func (s *APISuite) TestPingAnswersOKWithAPIVersion(c *check.C) {
	r := s.d.Get(c, "/_ping")
	c.Assert(r.Status, check.Equals, 200)
	c.Assert(string(r.Body), check.Equals, "OK")
	c.Assert(r.Header.Get("Api-Version"), check.Matches, `1\.[0-9]+`)
	c.Assert(r.Header.Get("Cache-Control"), check.Equals, "no-cache, no-store, must-revalidate")
	h := s.d.Req(c, http.MethodHead, "/_ping", nil)
	c.Assert(h.Status, check.Equals, 200)
	c.Assert(h.Header.Get("Api-Version"), check.Not(check.Equals), "")
	c.Assert(len(h.Body), check.Equals, 0)
}

func (s *APISuite) TestVersionReportsAPIRange(c *check.C) {
	for _, path := range []string{"/version", "/v1.50/version", "/v1.41/version"} {
		r := s.d.Get(c, path)
		c.Assert(r.Status, check.Equals, 200, check.Commentf("%s: %s", path, r))
		var v struct{ Version, ApiVersion, MinAPIVersion, Os, Arch, GoVersion string }
		r.JSON(c, &v)
		c.Assert(v.ApiVersion, check.Matches, `1\.[0-9]+`, check.Commentf("%s", r.Body))
		c.Assert(v.MinAPIVersion, check.Matches, `1\.[0-9]+`)
		c.Assert(v.Os, check.Equals, "linux")
		c.Assert(v.Arch, check.Not(check.Equals), "")
		c.Assert(r.Header.Get("Api-Version"), check.Equals, v.ApiVersion)
	}
}

func (s *APISuite) TestVersionTooOldIs400(c *check.C) {
	r := s.d.Get(c, "/v1.11/version")
	c.Assert(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s", r))
	c.Assert(string(r.Body), check.Matches, `(?s).*client version 1\.11 is too old\. Minimum supported API version is 1\.[0-9]+.*`)
}

func (s *APISuite) TestVersionTooNewIs400(c *check.C) {
	r := s.d.Get(c, "/v1.99/version")
	c.Assert(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s", r))
	c.Assert(r.Message(), check.Matches, `client version 1\.99 is too new\. Maximum supported API version is 1\.[0-9]+`)
}

func (s *APISuite) TestUnknownPathIsJSON404(c *check.C) {
	for _, p := range []string{"/v1.50/no/such/endpoint", "/nonsense", "/vabc/version"} {
		r := s.d.Get(c, p)
		c.Assert(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s", p))
		c.Assert(r.Message(), check.Equals, "page not found", check.Commentf("%s: %s", p, r.Body))
	}
}

func (s *APISuite) TestInfoHasRegistryConfig(c *check.C) {
	r := s.d.Get(c, "/v1.50/info")
	c.Assert(r.Status, check.Equals, 200)
	var info map[string]any
	r.JSON(c, &info)
	for _, k := range []string{"ID", "Images", "Driver", "DockerRootDir", "OSType", "Architecture", "NCPU", "MemTotal", "IndexServerAddress", "RegistryConfig", "ServerVersion", "Containers"} {
		_, ok := info[k]
		c.Check(ok, check.Equals, true, check.Commentf("/info lacks %s", k))
	}
	c.Assert(info["DockerRootDir"], check.Equals, s.d.Root)
	c.Assert(info["Containers"], check.Equals, float64(0))
	rc, _ := info["RegistryConfig"].(map[string]any)
	c.Assert(rc, check.NotNil)
	idx, _ := rc["IndexConfigs"].(map[string]any)
	hub, _ := idx["docker.io"].(map[string]any)
	c.Assert(hub, check.NotNil, check.Commentf("RegistryConfig.IndexConfigs lacks docker.io: %v", rc))
	c.Assert(hub["Official"], check.Equals, true)
	c.Assert(hub["Secure"], check.Equals, true)
	cidrs, _ := rc["InsecureRegistryCIDRs"].([]any)
	c.Assert(fmt.Sprint(cidrs), check.Matches, `.*127\.0\.0\.0/8.*`)
}

func (s *APISuite) TestSystemDFListsImages(c *check.C) {
	id := s.d.Import(c, "api/df:1")
	r := s.d.Get(c, "/v1.50/system/df")
	c.Assert(r.Status, check.Equals, 200, check.Commentf("%s", r))
	var df struct {
		LayersSize int64
		Images     []summary
		Containers []any
	}
	r.JSON(c, &df)
	c.Assert(df.LayersSize > 0, check.Equals, true)
	c.Assert(strings.Join(ids(df.Images), " "), check.Matches, ".*"+id+".*")
	c.Assert(df.Containers, check.HasLen, 0)
}

func (s *APISuite) TestContainerEndpointsAnswerCleanly(c *check.C) {
	r := s.d.Get(c, "/v1.50/containers/json")
	c.Assert(r.Status, check.Equals, 200)
	c.Assert(strings.TrimSpace(string(r.Body)), check.Equals, "[]")
	r = s.d.Get(c, "/v1.50/containers/x/json")
	c.Assert(r.Status, check.Equals, http.StatusNotFound)
	c.Assert(r.Message(), check.Matches, "(?i)no such container: x")
}

func (s *APISuite) TestMalformedNamesAre400(c *check.C) {
	for _, p := range []string{
		"/v1.50/images/UPPER:case/json",
		"/v1.50/images/bad name/json",
		"/v1.50/images/a::b/history",
	} {
		r := s.d.Get(c, strings.ReplaceAll(p, " ", "%20"))
		c.Check(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s: %s", p, r))
		c.Check(r.Message(), check.Not(check.Equals), "")
	}
	r := s.d.Req(c, http.MethodPost, "/v1.50/images/api/none:1/tag?repo=BAD&tag=x", nil)
	c.Assert(containsAny(fmt.Sprint(r.Status), "400", "404"), check.Equals, true, check.Commentf("%s", r))
}

func (s *APISuite) TestUnknownImagesAre404WithMessage(c *check.C) {
	cases := map[string]string{
		"GET /v1.50/images/nosuchimage/json":                                                             "No such image: nosuchimage",
		"GET /images/nosuchimage:latest/json":                                                            "No such image: nosuchimage:latest",
		"GET /v1.50/images/nosuchimage/history":                                                          "No such image: nosuchimage",
		"DELETE /v1.50/images/nosuchimage":                                                               "No such image: nosuchimage",
		"POST /v1.50/images/nosuchimage/tag?repo=x&tag=y":                                                "No such image: nosuchimage",
		"GET /v1.50/images/get?names=nosuchimage":                                                        "No such image: nosuchimage",
		"GET /v1.50/images/sha256:0000000000000000000000000000000000000000000000000000000000000000/json": "No such image: sha256:0000",
	}
	for req, want := range cases {
		method, path, _ := strings.Cut(req, " ")
		r := s.d.Req(c, method, path, nil)
		c.Check(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s: %s", req, r))
		c.Check(strings.Contains(r.Message(), want), check.Equals, true, check.Commentf("%s: message %q lacks %q", req, r.Message(), want))
	}
}

func (s *APISuite) TestImportInspectHistoryTag(c *check.C) {
	id := s.d.Import(c, "api/imported:1.0", `CMD ["/bin/sh"]`, "ENV A=b", "LABEL team=wharf")
	c.Assert(id, check.Matches, `sha256:[0-9a-f]{64}`)
	m := s.d.Inspect(c, "api/imported:1.0")
	c.Assert(m["Id"], check.Equals, id)
	c.Assert(m["RepoTags"], check.DeepEquals, []any{"api/imported:1.0"})
	c.Assert(m["RepoDigests"], check.DeepEquals, []any{}) // never null
	cfg, _ := m["Config"].(map[string]any)
	c.Assert(cfg["Cmd"], check.DeepEquals, []any{"/bin/sh"})
	c.Assert(fmt.Sprint(cfg["Env"]), check.Matches, `.*A=b.*`)
	c.Assert(cfg["Labels"], check.DeepEquals, map[string]any{"team": "wharf"})
	rootfs, _ := m["RootFS"].(map[string]any)
	c.Assert(rootfs["Type"], check.Equals, "layers")
	c.Assert(rootfs["Layers"], check.HasLen, 1)
	c.Assert(m["Os"], check.Equals, "linux")
	c.Assert(m["Size"].(float64) > 0, check.Equals, true)
	// By ID, short ID and sha256: prefix.
	for _, ref := range []string{id, strings.TrimPrefix(id, "sha256:"), strings.TrimPrefix(id, "sha256:")[:12]} {
		c.Assert(s.d.Inspect(c, ref)["Id"], check.Equals, id, check.Commentf("inspect %s", ref))
	}

	r := s.d.Get(c, "/v1.50/images/api/imported:1.0/history")
	c.Assert(r.Status, check.Equals, 200, check.Commentf("%s", r))
	var hist []struct {
		Id        string
		Created   int64
		CreatedBy string
		Size      int64
		Tags      []string
		Comment   string
	}
	r.JSON(c, &hist)
	c.Assert(len(hist) >= 1, check.Equals, true)
	c.Assert(hist[0].Id, check.Equals, id)
	c.Assert(hist[0].Tags, check.DeepEquals, []string{"api/imported:1.0"})

	r = s.d.Req(c, http.MethodPost, "/v1.50/images/api/imported:1.0/tag?repo=api/retagged&tag=2.0", nil)
	c.Assert(r.Status, check.Equals, http.StatusCreated, check.Commentf("%s", r))
	c.Assert(len(r.Body), check.Equals, 0)
	m2 := s.d.Inspect(c, "api/retagged:2.0")
	c.Assert(m2["Id"], check.Equals, id)
	tags := fmt.Sprint(m2["RepoTags"])
	c.Assert(strings.Contains(tags, "api/imported:1.0") && strings.Contains(tags, "api/retagged:2.0"), check.Equals, true, check.Commentf("%s", tags))
	// repo without tag defaults to latest.
	r = s.d.Req(c, http.MethodPost, "/v1.50/images/api/imported:1.0/tag?repo=api/retagged", nil)
	c.Assert(r.Status, check.Equals, http.StatusCreated)
	c.Assert(s.d.Inspect(c, "api/retagged:latest")["Id"], check.Equals, id)
	// A tag that looks like a digest algorithm is refused.
	r = s.d.Req(c, http.MethodPost, "/v1.50/images/api/imported:1.0/tag?repo=sha256&tag=x", nil)
	c.Assert(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s", r))
}

func (s *APISuite) TestImageListFilters(c *check.C) {
	before := s.d.Import(c, "flt/old:1", "LABEL era=old")
	labeled := s.d.Import(c, "flt/new:1", "LABEL era=new", "LABEL team=wharf")
	dangling := s.d.Import(c, "")
	after := s.d.Import(c, "flt/newer:1")

	got := ids(s.list(c, "?filters="+filtersQuery(map[string][]string{"reference": {"flt/*"}})))
	c.Assert(got, check.DeepEquals, sorted(before, labeled, after))

	got = ids(s.list(c, "?filters="+filtersQuery(map[string][]string{"reference": {"flt/new"}})))
	c.Assert(got, check.DeepEquals, []string{labeled})

	got = ids(s.list(c, "?filters="+filtersQuery(map[string][]string{"dangling": {"true"}})))
	c.Assert(contains(got, dangling), check.Equals, true, check.Commentf("dangling list %v lacks %s", got, dangling))
	c.Assert(contains(got, labeled), check.Equals, false)

	got = ids(s.list(c, "?filters="+filtersQuery(map[string][]string{"label": {"team=wharf"}})))
	c.Assert(got, check.DeepEquals, []string{labeled})
	got = ids(s.list(c, "?filters="+filtersQuery(map[string][]string{"label": {"era"}, "reference": {"flt/*"}})))
	c.Assert(got, check.DeepEquals, sorted(before, labeled))

	got = ids(s.list(c, "?filters="+filtersQuery(map[string][]string{"before": {"flt/newer:1"}, "reference": {"flt/*"}})))
	c.Assert(contains(got, after), check.Equals, false, check.Commentf("before=flt/newer:1 listed it: %v", got))
	got = ids(s.list(c, "?filters="+filtersQuery(map[string][]string{"since": {"flt/old:1"}, "reference": {"flt/*"}})))
	c.Assert(contains(got, before), check.Equals, false, check.Commentf("since=flt/old:1 listed it: %v", got))

	// Legacy {"k":["v"]} form.
	legacy := url.QueryEscape(`{"reference":["flt/new"]}`)
	c.Assert(ids(s.list(c, "?filters="+legacy)), check.DeepEquals, []string{labeled})

	r := s.d.Get(c, "/v1.50/images/json?filters="+filtersQuery(map[string][]string{"bogus": {"x"}}))
	c.Assert(r.Status, check.Equals, http.StatusBadRequest)
	c.Assert(r.Message(), check.Equals, "Invalid filter 'bogus'")

	// Plain list: RepoTags/RepoDigests are arrays, never null.
	raw := s.d.Get(c, "/v1.50/images/json")
	c.Assert(bytes.Contains(raw.Body, []byte(`"RepoTags":null`)), check.Equals, false)
	c.Assert(bytes.Contains(raw.Body, []byte(`"RepoDigests":null`)), check.Equals, false)
}

func sorted(s ...string) []string {
	sort.Strings(s)
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *APISuite) TestSaveThenLoadIntoFreshDaemonKeepsIDsAndDigests(c *check.C) {
	id1 := s.d.Import(c, "save/one:1", "LABEL n=1")
	id2 := s.d.Import(c, "save/two:1", "LABEL n=2")
	want1, want2 := s.d.Inspect(c, "save/one:1"), s.d.Inspect(c, "save/two:1")
	r := s.d.Get(c, "/v1.50/images/get?names=save/one:1&names=save/two:1")
	c.Assert(r.Status, check.Equals, 200, check.Commentf("%s", r))
	c.Assert(r.Header.Get("Content-Type"), check.Equals, "application/x-tar")
	names := tarNames(c, r.Body)
	for _, n := range []string{"oci-layout", "index.json", "manifest.json"} {
		c.Assert(contains(names, n), check.Equals, true, check.Commentf("saved tar lacks %s: %v", n, names))
	}

	fresh := StartDaemon(c)
	defer fresh.Stop(c)
	lr := fresh.Req(c, http.MethodPost, "/v1.50/images/load?quiet=1", bytes.NewReader(r.Body), "Content-Type", "application/x-tar")
	c.Assert(lr.Status, check.Equals, 200, check.Commentf("%s", lr))
	lines := lr.Lines(c)
	c.Assert(lines.Err(), check.Equals, "")
	c.Assert(lines.Has("Loaded image: save/one:1"), check.Equals, true, check.Commentf("%s", lr.Body))
	c.Assert(lines.Has("Loaded image: save/two:1"), check.Equals, true, check.Commentf("%s", lr.Body))
	got1, got2 := fresh.Inspect(c, "save/one:1"), fresh.Inspect(c, "save/two:1")
	c.Assert(got1["Id"], check.Equals, id1)
	c.Assert(got2["Id"], check.Equals, id2)
	for _, k := range []string{"RootFS", "Config", "Created", "Size", "RepoDigests", "Descriptor", "Architecture", "Os"} {
		c.Check(got1[k], check.DeepEquals, want1[k], check.Commentf("field %s after load", k))
		c.Check(got2[k], check.DeepEquals, want2[k], check.Commentf("field %s after load", k))
	}
	// Loading again is idempotent.
	lr = fresh.Req(c, http.MethodPost, "/v1.50/images/load?quiet=1", bytes.NewReader(r.Body), "Content-Type", "application/x-tar")
	c.Assert(lr.Status, check.Equals, 200)
	c.Assert(lr.Lines(c).Err(), check.Equals, "")
}

func (s *APISuite) TestRmiUntagsThenDeletes(c *check.C) {
	id := s.d.Import(c, "rmi/a:1")
	c.Assert(s.d.Req(c, http.MethodPost, "/v1.50/images/rmi/a:1/tag?repo=rmi/a&tag=2", nil).Status, check.Equals, 201)
	r := s.d.Req(c, http.MethodDelete, "/v1.50/images/rmi/a:2", nil)
	c.Assert(r.Status, check.Equals, 200, check.Commentf("%s", r))
	var del []map[string]string
	r.JSON(c, &del)
	c.Assert(del, check.DeepEquals, []map[string]string{{"Untagged": "rmi/a:2"}})
	c.Assert(s.d.Inspect(c, "rmi/a:1")["Id"], check.Equals, id)

	r = s.d.Req(c, http.MethodDelete, "/v1.50/images/rmi/a:1", nil)
	c.Assert(r.Status, check.Equals, 200, check.Commentf("%s", r))
	del = nil
	r.JSON(c, &del)
	c.Assert(len(del) >= 2, check.Equals, true, check.Commentf("%s", r.Body))
	c.Assert(del[0], check.DeepEquals, map[string]string{"Untagged": "rmi/a:1"})
	c.Assert(del[1], check.DeepEquals, map[string]string{"Deleted": id})
	c.Assert(s.d.Get(c, "/v1.50/images/"+id+"/json").Status, check.Equals, 404)
}

func (s *APISuite) TestRmiByIDOfImageInTwoReposIs409WithoutForce(c *check.C) {
	id := s.d.Import(c, "rmi/multi-a:1")
	c.Assert(s.d.Req(c, http.MethodPost, "/v1.50/images/rmi/multi-a:1/tag?repo=rmi/multi-b&tag=1", nil).Status, check.Equals, 201)
	short := strings.TrimPrefix(id, "sha256:")[:12]
	r := s.d.Req(c, http.MethodDelete, "/v1.50/images/"+short, nil)
	c.Assert(r.Status, check.Equals, http.StatusConflict, check.Commentf("%s", r))
	c.Assert(r.Message(), check.Matches, `(?i).*must be forced.*referenced in multiple repositories.*`)
	r = s.d.Req(c, http.MethodDelete, "/v1.50/images/"+short+"?force=1", nil)
	c.Assert(r.Status, check.Equals, 200, check.Commentf("%s", r))
	c.Assert(string(r.Body), check.Matches, `(?s).*"Untagged":"rmi/multi-a:1".*"Untagged":"rmi/multi-b:1".*`)
	c.Assert(string(r.Body), check.Matches, `(?s).*"Deleted":"`+id+`".*`)
}

func (s *APISuite) TestPruneRemovesDanglingImages(c *check.C) {
	dangling := s.d.Import(c, "")
	kept := s.d.Import(c, "prune/kept:1")
	r := s.d.Req(c, http.MethodPost, "/v1.50/images/prune?filters="+filtersQuery(map[string][]string{"dangling": {"true"}}), nil)
	c.Assert(r.Status, check.Equals, 200, check.Commentf("%s", r))
	var rep struct {
		ImagesDeleted  []map[string]string
		SpaceReclaimed int64
	}
	r.JSON(c, &rep)
	c.Assert(string(r.Body), check.Matches, `(?s).*"Deleted":"`+dangling+`".*`)
	c.Assert(rep.SpaceReclaimed > 0, check.Equals, true)
	c.Assert(s.d.Get(c, "/v1.50/images/"+dangling+"/json").Status, check.Equals, 404)
	c.Assert(s.d.Inspect(c, "prune/kept:1")["Id"], check.Equals, kept)
}

func (s *APISuite) TestLoadGarbageTarGivesClearError(c *check.C) {
	for name, body := range map[string][]byte{
		"not a tar":   []byte("this is not a tar archive at all, just text\n"),
		"empty tar":   makeTar(c, nil),
		"no manifest": makeTar(c, []tarEntry{{name: "hello.txt", body: "hi"}}),
	} {
		r := s.d.Req(c, http.MethodPost, "/v1.50/images/load?quiet=1", bytes.NewReader(body), "Content-Type", "application/x-tar")
		msg := r.Message()
		if r.Status == 200 {
			msg = r.Lines(c).Err()
		} else {
			c.Check(r.Status >= 400 && r.Status < 500, check.Equals, true, check.Commentf("%s: %s", name, r))
		}
		c.Check(msg, check.Not(check.Equals), "", check.Commentf("%s: load of garbage gave no error: %s", name, r))
	}
	c.Assert(s.d.Get(c, "/_ping").Status, check.Equals, 200)
}

func (s *APISuite) TestLoadRejectsEntriesEscapingTheStore(c *check.C) {
	outside := c.MkDir()
	canary := outside + "/canary"
	victim := outside + "/victim"
	c.Assert(writeFile(victim, "untouched"), check.IsNil)
	deep := strings.Repeat("../", 30) + strings.TrimPrefix(canary, "/")
	// A real archive, so that the hostile entries are the only thing wrong.
	s.d.Import(c, "escape/base:1")
	saved := s.d.Get(c, "/v1.50/images/get?names=escape/base:1")
	c.Assert(saved.Status, check.Equals, 200, check.Commentf("%s", saved))
	valid := func() []tarEntry { return tarEntries(c, saved.Body) }
	control := s.d.Req(c, http.MethodPost, "/v1.50/images/load?quiet=1", bytes.NewReader(makeTar(c, valid())), "Content-Type", "application/x-tar")
	c.Assert(control.Status, check.Equals, 200, check.Commentf("control load: %s", control))
	c.Assert(control.Lines(c).Err(), check.Equals, "", check.Commentf("control load of the unmodified archive failed"))
	cases := map[string][]tarEntry{
		"dotdot":   append(valid(), tarEntry{name: deep, body: "pwned"}),
		"absolute": append(valid(), tarEntry{name: canary, body: "pwned"}),
		"symlink": append(valid(),
			tarEntry{name: "blobs/evil", link: outside, symlink: true},
			tarEntry{name: "blobs/evil/canary", body: "pwned"}),
		"symlink-dotdot": append(valid(),
			tarEntry{name: "up", link: strings.Repeat("../", 30) + strings.TrimPrefix(outside, "/"), symlink: true},
			tarEntry{name: "up/canary", body: "pwned"}),
		"hardlink": append(valid(),
			tarEntry{name: "blobs/hl", link: victim, hardlink: true},
			tarEntry{name: "blobs/hl", body: "pwned"}),
		"hardlink-dotdot": append(valid(),
			tarEntry{name: "blobs/hl2", link: strings.Repeat("../", 30) + strings.TrimPrefix(victim, "/"), hardlink: true}),
	}
	for name, entries := range cases {
		r := s.d.Req(c, http.MethodPost, "/v1.50/images/load?quiet=1", bytes.NewReader(makeTar(c, entries)), "Content-Type", "application/x-tar")
		msg := r.Message()
		if r.Status == 200 {
			msg = r.Lines(c).Err()
		}
		c.Check(msg, check.Not(check.Equals), "", check.Commentf("%s: escaping tar was accepted: %s", name, r))
		c.Check(fileExists(canary), check.Equals, false, check.Commentf("%s: wrote %s outside the store", name, canary))
		c.Check(readFile(victim), check.Equals, "untouched", check.Commentf("%s: modified %s through a link", name, victim))
	}
	c.Assert(s.d.Get(c, "/_ping").Status, check.Equals, 200)
}

func (s *APISuite) TestEventsWithSinceUntilAndFilters(c *check.C) {
	since := time.Now().Add(-time.Second).Unix()
	id := s.d.Import(c, "events/img:1", "LABEL team=events")
	c.Assert(s.d.Req(c, http.MethodPost, "/v1.50/images/events/img:1/tag?repo=events/img&tag=2", nil).Status, check.Equals, 201)
	c.Assert(s.d.Req(c, http.MethodDelete, "/v1.50/images/events/img:2", nil).Status, check.Equals, 200)
	until := time.Now().Add(time.Second).Unix()

	r := s.d.Get(c, fmt.Sprintf("/v1.50/events?since=%d&until=%d", since, until))
	c.Assert(r.Status, check.Equals, 200, check.Commentf("%s", r))
	evs := r.Lines(c)
	actions := map[string]map[string]any{}
	for _, e := range evs {
		c.Check(e["Type"], check.Equals, "image", check.Commentf("%v", e))
		a, _ := e["Action"].(string)
		actions[a] = e
		// Legacy fields that old CLIs need.
		c.Check(e["status"], check.Equals, e["Action"], check.Commentf("%v", e))
		c.Check(e["id"], check.Not(check.Equals), nil, check.Commentf("%v", e))
		c.Check(e["time"], check.Not(check.Equals), nil)
		c.Check(e["timeNano"], check.Not(check.Equals), nil)
	}
	for _, a := range []string{"import", "tag", "untag"} {
		c.Check(actions[a], check.NotNil, check.Commentf("no %s event in %s", a, r.Body))
		// The image's labels are attributes of its events, as dockerd's.
		if e := actions[a]; e != nil {
			actor, _ := e["Actor"].(map[string]any)
			attrs, _ := actor["Attributes"].(map[string]any)
			c.Check(attrs["team"], check.Equals, "events", check.Commentf("%s event: %v", a, e))
		}
	}
	if tag := actions["tag"]; tag != nil {
		actor, _ := tag["Actor"].(map[string]any)
		attrs, _ := actor["Attributes"].(map[string]any)
		c.Check(actor["ID"], check.Equals, id)
		c.Check(attrs["name"], check.Equals, "events/img:2")
	}

	r = s.d.Get(c, fmt.Sprintf("/v1.50/events?since=%d&until=%d&filters=%s", since, until, filtersQuery(map[string][]string{"type": {"image"}, "event": {"tag"}})))
	c.Assert(r.Status, check.Equals, 200)
	evs = r.Lines(c)
	c.Assert(len(evs) >= 1, check.Equals, true, check.Commentf("%s", r.Body))
	for _, e := range evs {
		c.Check(e["Action"], check.Equals, "tag")
	}
	// Content type by version.
	c.Assert(r.Header.Get("Content-Type"), check.Equals, "application/json")
	r = s.d.Get(c, fmt.Sprintf("/v1.52/events?since=%d&until=%d", since, until))
	if r.Status == 200 {
		c.Check(r.Header.Get("Content-Type"), check.Equals, "application/jsonl")
	}

	r = s.d.Get(c, fmt.Sprintf("/v1.50/events?since=%d&until=%d", until, since))
	c.Assert(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("until before since: %s", r))
}

func (s *APISuite) TestInspectFieldsAreGatedByVersion(c *check.C) {
	s.d.Import(c, "gate/img:1")
	get := func(v string) map[string]any {
		r := s.d.Get(c, "/v"+v+"/images/gate/img:1/json")
		c.Assert(r.Status, check.Equals, 200, check.Commentf("v%s: %s", v, r))
		var m map[string]any
		r.JSON(c, &m)
		return m
	}
	has := func(m map[string]any, k string) bool { _, ok := m[k]; return ok }
	old, cur := get("1.41"), get("1.50")
	c.Check(has(old, "VirtualSize"), check.Equals, true, check.Commentf("VirtualSize below 1.44"))
	c.Check(has(cur, "VirtualSize"), check.Equals, false, check.Commentf("no VirtualSize from 1.44"))
	c.Check(has(old, "Container"), check.Equals, true, check.Commentf("Container below 1.45"))
	c.Check(has(cur, "Container"), check.Equals, false)
	c.Check(has(old, "Descriptor"), check.Equals, false, check.Commentf("Descriptor from 1.48"))
	c.Check(has(cur, "Descriptor"), check.Equals, true)
	for _, m := range []map[string]any{old, cur} {
		c.Check(has(m, "Parent"), check.Equals, true, check.Commentf("Parent always below 1.52"))
		c.Check(has(m, "DockerVersion"), check.Equals, true, check.Commentf("DockerVersion always below 1.52"))
		c.Check(m["Id"], check.Equals, cur["Id"])
	}
	// manifests needs 1.48.
	r := s.d.Get(c, "/v1.50/images/gate/img:1/json?manifests=1")
	c.Assert(r.Status, check.Equals, 200)
	var withM map[string]any
	r.JSON(c, &withM)
	c.Check(withM["Manifests"], check.HasLen, 1)
}

// The JSON platforms of inspect (API 1.49+) and history (1.48+) are checked
// as strictly as the string one of create (issue 11 #11).
func (s *APISuite) TestMalformedJSONPlatformIs400(c *check.C) {
	s.d.Import(c, "api/plat:1")
	for _, p := range []string{
		`{"os":"../../etc","architecture":"amd64"}`,
		`{"os":"linux","architecture":".."}`,
		`{"os":"linux","architecture":"amd64","variant":"../x"}`,
		`{"os":"linux/amd64","architecture":"amd64"}`,
		`{"os":"linux","architecture":"amd64","os.version":"1/2"}`,
	} {
		q := url.QueryEscape(p)
		for _, path := range []string{"/v1.50/images/api/plat:1/json?platform=" + q, "/v1.50/images/api/plat:1/history?platform=" + q} {
			r := s.d.Get(c, path)
			c.Assert(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s: %s", p, r))
			c.Assert(r.Message(), check.Matches, `.*invalid platform.*`, check.Commentf("%s", r))
		}
	}
}

// /system/df has dockerd's shape at every version (issue 11 #11): BuilderSize
// (0: there is no build cache), and image summaries gated like GET
// /images/json: VirtualSize below 1.44, Descriptor from 1.48.
func (s *APISuite) TestSystemDFShapeByVersion(c *check.C) {
	id := s.d.Import(c, "api/dfshape:1")
	for _, tc := range []struct {
		version            string
		virtual, described bool
	}{{"1.50", false, true}, {"1.47", false, false}, {"1.41", true, false}, {"1.22", true, false}} {
		r := s.d.Get(c, "/v"+tc.version+"/system/df")
		c.Assert(r.Status, check.Equals, 200, check.Commentf("%s", r))
		var df map[string]json.RawMessage
		r.JSON(c, &df)
		c.Assert(string(df["BuilderSize"]), check.Equals, "0", check.Commentf("%s: %s", tc.version, r.Body))
		for _, k := range []string{"LayersSize", "Images", "Containers", "Volumes", "BuildCache"} {
			_, ok := df[k]
			c.Assert(ok, check.Equals, true, check.Commentf("%s lacks %s", tc.version, k))
		}
		var images []map[string]any
		c.Assert(json.Unmarshal(df["Images"], &images), check.IsNil)
		var img map[string]any
		for _, m := range images {
			if m["Id"] == id {
				img = m
			}
		}
		c.Assert(img, check.NotNil)
		_, virtual := img["VirtualSize"]
		_, described := img["Descriptor"]
		c.Check(virtual, check.Equals, tc.virtual, check.Commentf("%s: VirtualSize", tc.version))
		c.Check(described, check.Equals, tc.described, check.Commentf("%s: Descriptor", tc.version))
		if tc.virtual {
			c.Check(img["VirtualSize"], check.Equals, img["Size"])
		}
	}
}
