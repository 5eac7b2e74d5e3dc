package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// CompatGraphSuite: issue 11's image-side differences from dockerd, checked
// through wharfd with the docker CLI where a user meets them.
type CompatGraphSuite struct {
	suiteFixture
	reg *testregistry.Registry
	d   *Daemon
}

func TestCompatGraphSuite(t *testing.T) { t.Parallel(); runSuite(t, &CompatGraphSuite{}) }

func (s *CompatGraphSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.d = s.startDaemon(c)
}

// events returns the image events between since and now+1s with the
// given filters, as (Action, Actor.ID, Attributes).
func (s *CompatGraphSuite) events(c *check.C, since int64, filters map[string][]string) []eventSeen {
	until := time.Now().Add(time.Second).Unix()
	q := fmt.Sprintf("/v1.50/events?since=%d&until=%d", since, until)
	if filters != nil {
		q += "&filters=" + filtersQuery(filters)
	}
	r := s.d.Get(c, q)
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	var out []eventSeen
	for _, e := range r.Lines(c) {
		actor, _ := e["Actor"].(map[string]any)
		attrs := map[string]string{}
		if a, ok := actor["Attributes"].(map[string]any); ok {
			for k, v := range a {
				attrs[k], _ = v.(string)
			}
		}
		id, _ := actor["ID"].(string)
		action, _ := e["Action"].(string)
		out = append(out, eventSeen{action, id, attrs})
	}
	return out
}

type eventSeen struct {
	action, id string
	attrs      map[string]string
}

func (e eventSeen) String() string { return fmt.Sprintf("%s %s %v", e.action, e.id, e.attrs) }

// TestPullAndPushEventsAreDockerds: dockerd's pull event is
// {ID: name:tag, name: repository, labels…}, so --filter label= finds it;
// a push of one tag the same; push --all-tags logs one event for the
// repository (captures in shared/docker-api/samples/events-filter-image.json).
func (s *CompatGraphSuite) TestPullAndPushEventsAreDockerds(c *check.C) {
	labels := map[string]string{"org.example.name": "tiny", "org.example.version": "1.0"}
	pushImage(c, s.reg, "compat/events", "1.0", testregistry.ImageOptions{Labels: labels})
	name := s.reg.Host + "/compat/events"
	since := time.Now().Add(-time.Second).Unix()
	_, lines := s.d.Pull(c, name, "1.0", "")
	c.Assert(lines.Err(), check.Equals, "")

	evs := s.events(c, since, map[string][]string{"label": {"org.example.name=tiny"}, "event": {"pull"}})
	c.Assert(evs, check.HasLen, 1, check.Commentf("pull events found by label: %v", evs))
	c.Check(evs[0].id, check.Equals, name+":1.0")
	c.Check(evs[0].attrs["name"], check.Equals, name)
	c.Check(evs[0].attrs["org.example.version"], check.Equals, "1.0")

	// The docker CLI's own filter finds it too.
	out := s.d.DockerOK(c, "events", "--since", fmt.Sprint(since), "--until", fmt.Sprint(time.Now().Add(time.Second).Unix()),
		"--filter", "label=org.example.name=tiny", "--filter", "event=pull", "--format", "{{.Action}} {{.Actor.ID}} {{index .Actor.Attributes \"name\"}}")
	c.Check(strings.TrimSpace(out.Stdout), check.Equals, "pull "+name+":1.0 "+name)

	// push of one tag, then --all-tags of a repository with two.
	c.Assert(s.d.Req(c, http.MethodPost, "/v1.50/images/"+name+":1.0/tag?repo="+name+"&tag=2.0", nil).Status, check.Equals, http.StatusCreated)
	since = time.Now().Add(-time.Second).Unix()
	_, lines = s.d.Push(c, name, "1.0", "")
	c.Assert(lines.Err(), check.Equals, "")
	_, lines = s.d.Push(c, name, "", "")
	c.Assert(lines.Err(), check.Equals, "")
	evs = s.events(c, since, map[string][]string{"event": {"push"}})
	c.Assert(evs, check.HasLen, 2, check.Commentf("one push of a tag, one --all-tags push of two tags: %v", evs))
	c.Check(evs[0].id, check.Equals, name+":1.0")
	c.Check(evs[0].attrs["name"], check.Equals, name)
	c.Check(evs[0].attrs["org.example.name"], check.Equals, "tiny")
	c.Check(evs[1].id, check.Equals, name)
	c.Check(evs[1].attrs, check.DeepEquals, map[string]string{"name": name})
}

// TestListBeforeSinceAnImageWithoutCreationTime: images built by ko, crane
// or distroless carry the epoch (or nothing) as creation time. before=X
// then lists nothing and since=X never lists X; wharf used a zero time to
// mean "no filter" and listed everything, X included.
func (s *CompatGraphSuite) TestListBeforeSinceAnImageWithoutCreationTime(c *check.C) {
	// One image with no "created" at all (as crane and ko write them), one
	// at the epoch, one recent.
	layer := tarLayer(c, "data", verifyOCITarLayer)
	cfg, err := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layer.diffID}},
	})
	c.Assert(err, check.IsNil)
	img := registryImage(c, false, testregistry.NewBlob(testregistry.MediaTypeOCIConfig, cfg), []rawLayer{layer})
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, "compat/nocreated", "1", img), check.IsNil)
	pushImage(c, s.reg, "compat/epoch", "1", testregistry.ImageOptions{Created: time.Unix(0, 0).UTC()})
	pushImage(c, s.reg, "compat/recent", "1", testregistry.ImageOptions{})
	nocreated, epoch, recent := s.reg.Host+"/compat/nocreated:1", s.reg.Host+"/compat/epoch:1", s.reg.Host+"/compat/recent:1"
	for _, n := range []string{nocreated, epoch, recent} {
		_, lines := s.d.Pull(c, strings.TrimSuffix(n, ":1"), "1", "")
		c.Assert(lines.Err(), check.Equals, "", check.Commentf("pull %s", n))
	}
	for _, x := range []string{nocreated, epoch} {
		before := s.d.DockerOK(c, "image", "ls", "--filter", "before="+x, "--format", "{{.Repository}}:{{.Tag}}")
		c.Check(strings.TrimSpace(before.Stdout), check.Equals, "", check.Commentf("before %s", x))
		since := s.d.DockerOK(c, "image", "ls", "--filter", "since="+x, "--format", "{{.Repository}}:{{.Tag}}")
		c.Check(strings.Contains(since.Stdout, x), check.Equals, false, check.Commentf("since=%s lists the image itself:\n%s", x, since.Stdout))
		c.Check(strings.Contains(since.Stdout, recent), check.Equals, true, check.Commentf("since=%s misses a newer image:\n%s", x, since.Stdout))
	}
}

// TestPlatformFlagsAreHonouredOrRefused: --platform on rmi, save, load and
// push (API 1.46–1.50) was accepted and ignored: `docker image rm
// --platform linux/s390x` untagged the whole amd64 image. wharfd keeps one
// platform per image: a platform it stores is honoured, another refused
// with the reason, and nothing is removed, saved or pushed for it.
func (s *CompatGraphSuite) TestPlatformFlagsAreHonouredOrRefused(c *check.C) {
	pushImage(c, s.reg, "compat/plat", "1", testregistry.ImageOptions{})
	name := s.reg.Host + "/compat/plat:1"
	_, lines := s.d.Pull(c, s.reg.Host+"/compat/plat", "1", "")
	c.Assert(lines.Err(), check.Equals, "")
	archive := c.MkDir() + "/plat.tar"

	for _, args := range [][]string{
		{"image", "rm", "--platform", "linux/s390x", name},
		{"save", "--platform", "linux/s390x", "-o", archive, name},
		{"push", "--platform", "linux/s390x", name},
	} {
		res := s.d.Docker(c, args...)
		c.Check(res.ExitCode, check.Not(check.Equals), 0, check.Commentf("%v was accepted:\n%s", args, res))
		c.Check(res.Stderr, check.Matches, "(?s).*does not provide the specified platform.*", check.Commentf("%v", args))
	}
	// Nothing was removed.
	c.Assert(s.d.Get(c, "/v1.50/images/"+name+"/json").Status, check.Equals, http.StatusOK)

	// The platform it is stored for is honoured.
	s.d.DockerOK(c, "save", "--platform", "linux/amd64", "-o", archive, name)
	s.d.DockerOK(c, "push", "--platform", "linux/amd64", name)
	res := s.d.Docker(c, "load", "--platform", "linux/s390x", "-i", archive)
	c.Check(res.ExitCode, check.Not(check.Equals), 0, check.Commentf("load of an amd64 archive for s390x was accepted:\n%s", res))
	s.d.DockerOK(c, "image", "rm", "--platform", "linux/amd64", name)
	c.Assert(s.d.Get(c, "/v1.50/images/"+name+"/json").Status, check.Equals, http.StatusNotFound)
	s.d.DockerOK(c, "load", "--platform", "linux/amd64", "-i", archive)
	c.Assert(s.d.Get(c, "/v1.50/images/"+name+"/json").Status, check.Equals, http.StatusOK)
}

// TestForcedRemoveByIDPrintsEveryReference: `docker rmi -f <id>` of a
// pulled image names every reference it drops — tags and repo@digest — as
// dockerd prints them, then the deletion.
func (s *CompatGraphSuite) TestForcedRemoveByIDPrintsEveryReference(c *check.C) {
	pushImage(c, s.reg, "compat/rmid", "1", testregistry.ImageOptions{})
	repo := s.reg.Host + "/compat/rmid"
	_, lines := s.d.Pull(c, repo, "1", "")
	c.Assert(lines.Err(), check.Equals, "")
	s.d.DockerOK(c, "tag", repo+":1", repo+":2")
	img := s.d.Inspect(c, repo+":1")
	id, _ := img["Id"].(string)
	digests, _ := img["RepoDigests"].([]any)
	c.Assert(digests, check.HasLen, 1)
	out := s.d.DockerOK(c, "rmi", "-f", strings.TrimPrefix(id, "sha256:")[:12])
	want := []string{"Untagged: " + repo + ":1", "Untagged: " + repo + ":2", "Untagged: " + digests[0].(string), "Deleted: " + id}
	for _, w := range want {
		c.Check(strings.Contains(out.Stdout, w), check.Equals, true, check.Commentf("missing %q in:\n%s", w, out.Stdout))
	}
}

// TestSizesAgreeAndDiskUsageSharesLayers: an image's Size is one number —
// the bytes of its layers as stored (compressed when they arrived
// compressed) — whichever of images, inspect, history, remote inspect and
// system df shows it; `docker system df -v` shows the bytes two images share
// (SHARED SIZE) and the rest (UNIQUE SIZE) instead of N/A.
func (s *CompatGraphSuite) TestSizesAgreeAndDiskUsageSharesLayers(c *check.C) {
	img := pushImage(c, s.reg, "compat/size", "1", testregistry.ImageOptions{Layers: 3, LayerSize: 4096})
	repo := s.reg.Host + "/compat/size"
	_, lines := s.d.Pull(c, repo, "1", "")
	c.Assert(lines.Err(), check.Equals, "")
	var want int64
	for _, l := range img.Layers {
		want += int64(len(l.Data))
	}
	size := func(v any) int64 { f, _ := v.(float64); return int64(f) }

	insp := s.d.Inspect(c, repo+":1")
	c.Check(size(insp["Size"]), check.Equals, want, check.Commentf("inspect"))
	var list []map[string]any
	r := s.d.Get(c, "/v1.50/images/json?filters="+filtersQuery(map[string][]string{"reference": {repo}}))
	r.JSON(c, &list)
	c.Assert(list, check.HasLen, 1)
	c.Check(size(list[0]["Size"]), check.Equals, want, check.Commentf("images"))
	var hist []map[string]any
	s.d.Get(c, "/v1.50/images/"+repo+":1/history").JSON(c, &hist)
	var hsum int64
	for _, h := range hist {
		hsum += size(h["Size"])
	}
	c.Check(hsum, check.Equals, want, check.Commentf("history"))
	var remote map[string]any
	s.d.Get(c, "/v1.50/images/"+repo+":1/json?remote=1").JSON(c, &remote)
	c.Check(size(remote["Size"]), check.Equals, want, check.Commentf("remote inspect"))

	// Two images (different configs) sharing one layer.
	shared := tarLayer(c, "shared", verifyOCITarLayer)
	own := tarLayer(c, "own", verifyOCITarLayer)
	ctx, cancel := fixtureCtx()
	defer cancel()
	for i, layers := range [][]rawLayer{{shared}, {shared, own}} {
		var ids []string
		for _, l := range layers {
			ids = append(ids, l.diffID)
		}
		cfg, err := json.Marshal(map[string]any{"architecture": "amd64", "os": "linux", "created": "2025-01-0" + fmt.Sprint(i+1) + "T00:00:00Z",
			"rootfs": map[string]any{"type": "layers", "diff_ids": ids}})
		c.Assert(err, check.IsNil)
		im := registryImage(c, false, testregistry.NewBlob(testregistry.MediaTypeOCIConfig, cfg), layers)
		c.Assert(s.reg.Client().PushImage(ctx, fmt.Sprintf("compat/share%d", i), "1", im), check.IsNil)
		_, lines = s.d.Pull(c, fmt.Sprintf("%s/compat/share%d", s.reg.Host, i), "1", "")
		c.Assert(lines.Err(), check.Equals, "")
	}
	var df struct {
		LayersSize int64
		Images     []map[string]any
	}
	s.d.Get(c, "/v1.50/system/df").JSON(c, &df)
	sharedBytes := int64(len(shared.blob.Data))
	found := 0
	for _, im := range df.Images {
		tags, _ := im["RepoTags"].([]any)
		if len(tags) == 1 && strings.Contains(fmt.Sprint(tags[0]), "/compat/share") {
			found++
			c.Check(size(im["SharedSize"]), check.Equals, sharedBytes, check.Commentf("SharedSize of %v", tags))
		} else {
			c.Check(size(im["SharedSize"]), check.Equals, int64(0), check.Commentf("SharedSize of %v", tags))
		}
	}
	c.Check(found, check.Equals, 2)
	out := s.d.DockerOK(c, "system", "df", "-v")
	c.Check(strings.Contains(out.Stdout, "N/A"), check.Equals, false, check.Commentf("docker system df -v:\n%s", out.Stdout))
}
