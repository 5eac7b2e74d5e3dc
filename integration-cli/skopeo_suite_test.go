package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// SkopeoSuite drives wharfd with skopeo's docker-daemon: transport (Debian's
// skopeo 1.9, installed by .ci/run). That skopeo pins API 1.22 without
// negotiating and only calls GET /images/get and POST /images/load, so it
// checks the old API versions and both directions of the docker archive
// format against a client we do not control (issue 11 #1).
type SkopeoSuite struct {
	suiteFixture
	d   *Daemon
	reg *testregistry.Registry
}

func TestSkopeoSuite(t *testing.T) { t.Parallel(); runSuite(t, &SkopeoSuite{}) }

func (s *SkopeoSuite) SetUpSuite(c *check.C) {
	skopeoPath(c)
	s.d = s.startDaemon(c)
	s.reg = s.startRegistry(c, testregistry.Options{})
}

func skopeoPath(c *check.C) string { return requireClient(c, "skopeo", "skopeo (apt)") }

// skopeo runs skopeo with its temp files and config under the daemon's
// Home; --insecure-policy because no signature policy is installed there.
func (s *SkopeoSuite) skopeo(c *check.C, args ...string) Result {
	tmp := c.MkDir()
	env := append(s.d.cliEnv(), "TMPDIR="+tmp)
	return runCmd(c, nil, env, skopeoPath(c), append([]string{"--insecure-policy"}, args...)...)
}

func (s *SkopeoSuite) skopeoOK(c *check.C, args ...string) Result {
	r := s.skopeo(c, args...)
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s\n--- wharfd log (tail) ---\n%s", r, logTail(s.d)))
	return r
}

// pulled puts a two-layer image into the registry and pulls it into wharfd.
func (s *SkopeoSuite) pulled(c *check.C, repo string) (string, *testregistry.Image) {
	img := pushImage(c, s.reg, repo, "1", testregistry.ImageOptions{Layers: 2, Labels: map[string]string{"via": "skopeo"}})
	name := s.reg.Host + "/" + repo + ":1"
	_, lines := s.d.Pull(c, s.reg.Host+"/"+repo, "1", "")
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("pull %s", name))
	return name, img
}

func (s *SkopeoSuite) TestSkopeoInspectDockerDaemon(c *check.C) {
	name, img := s.pulled(c, "skopeo/inspect")
	out := s.skopeoOK(c, "inspect", "--daemon-host", s.d.Host, "docker-daemon:"+name)
	var ins struct {
		Architecture, Os string
		Layers           []string
		Labels           map[string]string
	}
	c.Assert(json.Unmarshal([]byte(out.Stdout), &ins), check.IsNil, check.Commentf("%s", out))
	c.Assert(ins.Architecture, check.Equals, img.Platform.Architecture)
	c.Assert(ins.Os, check.Equals, img.Platform.OS)
	c.Assert(ins.Layers, check.DeepEquals, img.DiffIDs, check.Commentf("a docker archive carries the uncompressed layers"))
	c.Assert(ins.Labels["via"], check.Equals, "skopeo")

	raw := s.skopeoOK(c, "inspect", "--raw", "--daemon-host", s.d.Host, "docker-daemon:"+name)
	var m struct{ Config struct{ Digest string } }
	c.Assert(json.Unmarshal([]byte(raw.Stdout), &m), check.IsNil, check.Commentf("%s", raw))
	c.Assert(m.Config.Digest, check.Equals, img.ID(), check.Commentf("the config must come out byte for byte"))

	missing := s.skopeo(c, "inspect", "--daemon-host", s.d.Host, "docker-daemon:skopeo/nosuch:1")
	c.Assert(missing.ExitCode, check.Not(check.Equals), 0)
	c.Assert(missing.Stderr, check.Matches, `(?s).*No such image.*`)
}

func (s *SkopeoSuite) TestSkopeoCopyDockerDaemonToOCIAndBack(c *check.C) {
	name, img := s.pulled(c, "skopeo/copy")
	dir := filepath.Join(c.MkDir(), "layout")
	s.skopeoOK(c, "copy", "--src-daemon-host", s.d.Host, "docker-daemon:"+name, "oci:"+dir+":copied")
	var index struct {
		Manifests []struct{ Annotations map[string]string }
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	c.Assert(err, check.IsNil)
	c.Assert(json.Unmarshal(b, &index), check.IsNil)
	c.Assert(index.Manifests, check.HasLen, 1)
	c.Assert(index.Manifests[0].Annotations["org.opencontainers.image.ref.name"], check.Equals, "copied")

	s.skopeoOK(c, "copy", "--dest-daemon-host", s.d.Host, "oci:"+dir+":copied", "docker-daemon:skopeo/back:2")
	back := s.d.Inspect(c, "skopeo/back:2")
	c.Assert(back["Id"], check.Equals, img.ID(), check.Commentf("same config, same image ID"))
	// The same image (same config) now has both names.
	c.Assert(back["RepoTags"], check.DeepEquals, []any{name, "skopeo/back:2"})
	rootfs, _ := back["RootFS"].(map[string]any)
	c.Assert(rootfs["Layers"], check.DeepEquals, toAny(img.DiffIDs))

	// And once more through the daemon: what skopeo loaded, it can read.
	again := s.skopeoOK(c, "inspect", "--daemon-host", s.d.Host, "docker-daemon:skopeo/back:2")
	c.Assert(again.Stdout, check.Matches, `(?s).*`+img.DiffIDs[1]+`.*`)
}

// An operator who raises the floor (as dockerd 25+ does by default) gets
// skopeo's API 1.22 refused with dockerd's message, and /version says so.
func (s *SkopeoSuite) TestSkopeoRefusedBelowConfiguredMinAPIVersion(c *check.C) {
	d := StartDaemon(c, "--min-api-version", "1.24")
	defer d.Stop(c)
	id := d.Import(c, "skopeo/floor:1")
	c.Assert(id, check.Not(check.Equals), "")
	tmp := c.MkDir()
	r := runCmd(c, nil, append(d.cliEnv(), "TMPDIR="+tmp), skopeoPath(c), "--insecure-policy", "inspect", "--daemon-host", d.Host, "docker-daemon:skopeo/floor:1")
	c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Assert(r.Stderr, check.Matches, `(?s).*client version 1\.22 is too old\. Minimum supported API version is 1\.24.*`)
	var v struct{ MinAPIVersion string }
	d.Get(c, "/version").JSON(c, &v)
	c.Assert(v.MinAPIVersion, check.Equals, "1.24")
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
