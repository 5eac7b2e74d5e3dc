package integration

import (
	"archive/tar"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// MultiPlatformSuite: local multi-platform images as Engine 29's
// containerd image store keeps them (issue 23). A 2-platform index
// (linux/amd64, linux/arm64/v8) is pushed to a real registry; the daemon's
// own platform is this machine's (amd64 or arm64), "other" is the second.
type MultiPlatformSuite struct {
	suiteFixture
	reg *testregistry.Registry
	d   *Daemon
}

func TestMultiPlatformSuite(t *testing.T) { t.Parallel(); runSuite(t, &MultiPlatformSuite{}) }

func (s *MultiPlatformSuite) SetUpSuite(c *check.C) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		c.Skip("the fixture index holds amd64 and arm64")
	}
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.d = s.startDaemon(c)
}

// platforms: the index's images for the host and the other platform, with
// their platform strings.
func hostAndOther(ix *testregistry.Index) (host, other *testregistry.Image, hostP, otherP string) {
	if runtime.GOARCH == "arm64" {
		return ix.Images[1], ix.Images[0], "linux/arm64", "linux/amd64"
	}
	return ix.Images[0], ix.Images[1], "linux/amd64", "linux/arm64"
}

type inspectOut struct {
	ID           string
	Architecture string
	RepoTags     []string
	RepoDigests  []string
	Descriptor   struct{ Digest string }
}

func (s *MultiPlatformSuite) inspect(c *check.C, args ...string) inspectOut {
	r := s.d.DockerOK(c, append([]string{"image", "inspect"}, args...)...)
	var out []inspectOut
	c.Assert(json.Unmarshal([]byte(r.Stdout), &out), check.IsNil, check.Commentf("%s", r))
	c.Assert(out, check.HasLen, 1)
	return out[0]
}

// Pulling the other platform and then the host's into one tag leaves one
// image holding both: the tag keeps both (Engine 29), `docker images`
// counts it once, inspect and history without --platform answer for the
// host's platform and with it for the one named; `image ls --tree` lists
// both with their sizes.
func (s *MultiPlatformSuite) TestTwoPlatformsInOneTag(c *check.C) {
	ix := pushIndex(c, s.reg, "mp/two", "1", testregistry.IndexOptions{})
	host, other, hostP, otherP := hostAndOther(ix)
	ref := s.reg.Host + "/mp/two:1"
	s.d.WharfOK(c, "pull", "--platform", otherP, ref)
	got := s.inspect(c, ref)
	c.Assert(got.ID, check.Equals, other.Config.Digest, check.Commentf("only %s present: the image is it", otherP))
	s.d.WharfOK(c, "pull", "--platform", hostP, ref)

	got = s.inspect(c, ref)
	c.Check(got.ID, check.Equals, host.Config.Digest)
	c.Check(got.Architecture, check.Equals, runtime.GOARCH)
	c.Check(got.RepoDigests, check.DeepEquals, []string{s.reg.Host + "/mp/two@" + ix.Digest()})
	c.Check(got.Descriptor.Digest, check.Equals, ix.Digest())
	o := s.inspect(c, "--platform", otherP, ref)
	c.Check(o.ID, check.Equals, other.Config.Digest)
	c.Check(o.Architecture, check.Not(check.Equals), runtime.GOARCH)
	c.Check(o.RepoTags, check.DeepEquals, []string{ref}, check.Commentf("the tag names both platforms"))
	// The wharf CLI's inspect --platform agrees.
	w := s.d.WharfOK(c, "inspect", "--platform", otherP, "-f", "{{.Id}}", ref)
	c.Check(strings.TrimSpace(w.Stdout), check.Equals, other.Config.Digest)
	// name@digest of the other platform's manifest finds that platform.
	byDigest := s.inspect(c, s.reg.Host+"/mp/two@"+other.Manifest.Digest)
	c.Check(byDigest.ID, check.Equals, other.Config.Digest)
	bad := s.d.Docker(c, "image", "inspect", "--platform", "linux/s390x", ref)
	c.Check(bad.ExitCode, check.Not(check.Equals), 0)
	c.Check(bad.Stderr, check.Matches, `(?s).*does not provide the specified platform \(linux/s390x\).*`)

	// docker images counts the image once.
	ls := s.d.DockerOK(c, "images", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}", s.reg.Host+"/mp/two")
	c.Check(strings.Count(strings.TrimSpace(ls.Stdout), "\n"), check.Equals, 0, check.Commentf("%s", ls))

	// history per platform: the fixture's configs have one entry each,
	// for their own layer; the IDs differ.
	hh := s.d.DockerOK(c, "history", "--no-trunc", "--format", "{{.ID}}", ref)
	ho := s.d.DockerOK(c, "history", "--no-trunc", "--format", "{{.ID}}", "--platform", otherP, ref)
	c.Check(strings.Contains(hh.Stdout, host.Config.Digest), check.Equals, true, check.Commentf("%s", hh))
	c.Check(strings.Contains(ho.Stdout, other.Config.Digest), check.Equals, true, check.Commentf("%s", ho))

	// GET /images/json?manifests=1: both image manifests available, each
	// with its own size; docker image ls --tree shows both platforms.
	r := s.d.Get(c, "/v1.50/images/json?manifests=1")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	var list []struct {
		RepoTags  []string
		Manifests []struct {
			ID        string
			Available bool
			Kind      string
			Size      struct{ Content, Total int64 }
			ImageData *struct {
				Platform   struct{ Architecture string }
				Containers []string
			}
		}
	}
	r.JSON(c, &list)
	found := 0
	for _, im := range list {
		if len(im.RepoTags) == 0 || im.RepoTags[0] != ref {
			continue
		}
		found++
		c.Assert(im.Manifests, check.HasLen, 2, check.Commentf("%s", r))
		for _, m := range im.Manifests {
			c.Check(m.Available, check.Equals, true)
			c.Check(m.Kind, check.Equals, "image")
			c.Check(m.Size.Content > 0, check.Equals, true)
			c.Check(m.ImageData.Containers, check.HasLen, 0)
		}
	}
	c.Check(found, check.Equals, 1)
	tree := s.d.Docker(c, "image", "ls", "--tree", s.reg.Host+"/mp/two")
	c.Assert(tree.ExitCode, check.Equals, 0, check.Commentf("%s", tree))
	c.Check(tree.Stdout, check.Matches, `(?s).*linux/amd64.*`)
	c.Check(tree.Stdout, check.Matches, `(?s).*linux/arm64.*`)
}

// mpTarEntries lists a tar's blobs and reads its index.json.
func mpTarEntries(c *check.C, path string) (blobs map[string]bool, index []byte) {
	f, err := os.Open(path)
	c.Assert(err, check.IsNil)
	defer f.Close()
	blobs = map[string]bool{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return blobs, index
		}
		c.Assert(err, check.IsNil)
		if strings.HasPrefix(h.Name, "blobs/sha256/") && h.Typeflag == tar.TypeReg {
			blobs["sha256:"+strings.TrimPrefix(h.Name, "blobs/sha256/")] = true
		}
		if h.Name == "index.json" {
			index, err = io.ReadAll(tr)
			c.Assert(err, check.IsNil)
		}
	}
}

// save without --platform writes every present platform under the index
// (index.json names it); --platform writes that platform's manifest alone;
// load keeps every platform the archive holds, and load --platform only
// that one. push without --platform pushes the index (every platform
// present), with --platform that platform's manifest. rmi --platform
// removes one platform: the image stays, its tag too, and the platform's
// own blobs go.
func (s *MultiPlatformSuite) TestSaveLoadPushRmiPerPlatform(c *check.C) {
	ix := pushIndex(c, s.reg, "mp/ops", "1", testregistry.IndexOptions{})
	host, other, hostP, otherP := hostAndOther(ix)
	ref := s.reg.Host + "/mp/ops:1"
	s.d.WharfOK(c, "pull", "--platform", hostP, ref)
	s.d.WharfOK(c, "pull", "--platform", otherP, ref)
	dir := c.MkDir()

	all := filepath.Join(dir, "all.tar")
	s.d.DockerOK(c, "save", "-o", all, ref)
	blobs, index := mpTarEntries(c, all)
	for _, d := range []string{ix.Digest(), host.Manifest.Digest, other.Manifest.Digest, host.Config.Digest, other.Config.Digest} {
		c.Check(blobs[d], check.Equals, true, check.Commentf("%s not saved", d))
	}
	c.Check(strings.Contains(string(index), ix.Digest()), check.Equals, true, check.Commentf("%s", index))

	one := filepath.Join(dir, "one.tar")
	s.d.DockerOK(c, "save", "--platform", otherP, "-o", one, ref)
	blobs, index = mpTarEntries(c, one)
	c.Check(blobs[other.Config.Digest], check.Equals, true)
	c.Check(blobs[host.Config.Digest], check.Equals, false)
	c.Check(strings.Contains(string(index), other.Manifest.Digest), check.Equals, true, check.Commentf("%s", index))

	// Push: all present → the index; --platform → that manifest.
	s.d.DockerOK(c, "tag", ref, s.reg.Host+"/mp/pushed:all")
	s.d.DockerOK(c, "tag", ref, s.reg.Host+"/mp/pushed:one")
	s.d.DockerOK(c, "push", s.reg.Host+"/mp/pushed:all")
	s.d.DockerOK(c, "push", "--platform", otherP, s.reg.Host+"/mp/pushed:one")
	ctx, cancel := fixtureCtx()
	defer cancel()
	_, _, d, err := s.reg.Client().GetManifest(ctx, "mp/pushed", "all")
	c.Assert(err, check.IsNil)
	c.Check(d, check.Equals, ix.Digest())
	_, _, d, err = s.reg.Client().GetManifest(ctx, "mp/pushed", "one")
	c.Assert(err, check.IsNil)
	c.Check(d, check.Equals, other.Manifest.Digest)

	// Load into a fresh daemon: both platforms, the same ID and digest.
	d2 := s.startDaemon(c)
	d2.DockerOK(c, "load", "-i", all)
	got := struct{ ID, Arch string }{}
	r := d2.DockerOK(c, "image", "inspect", "-f", "{{.ID}} {{.Architecture}}", ref)
	f := strings.Fields(r.Stdout)
	got.ID, got.Arch = f[0], f[1]
	c.Check(got.ID, check.Equals, host.Config.Digest)
	r = d2.DockerOK(c, "image", "inspect", "-f", "{{.ID}} {{json .RepoDigests}}", "--platform", otherP, ref)
	c.Check(r.Stdout, check.Matches, other.Config.Digest+` .*`+ix.Digest()+`.*\n`)
	// load --platform: only that platform.
	d3 := s.startDaemon(c)
	d3.DockerOK(c, "load", "--platform", otherP, "-i", all)
	r = d3.DockerOK(c, "image", "inspect", "-f", "{{.ID}}", ref)
	c.Check(strings.TrimSpace(r.Stdout), check.Equals, other.Config.Digest)
	c.Check(d3.Docker(c, "image", "inspect", "--platform", hostP, ref).ExitCode, check.Not(check.Equals), 0)

	// rmi --platform: one platform goes, the image and tag stay.
	rm := s.d.DockerOK(c, "rmi", "--platform", otherP, ref)
	c.Check(rm.Stdout, check.Matches, `(?s).*Deleted: `+other.Manifest.Digest+`.*`)
	c.Check(s.inspect(c, ref).ID, check.Equals, host.Config.Digest)
	gone := s.d.Docker(c, "image", "inspect", "--platform", otherP, ref)
	c.Check(gone.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", gone))
	// The other platform's config is no longer stored.
	c.Check(s.d.WharfOK(c, "system", "check").ExitCode, check.Equals, 0)
	_, err = os.Stat(filepath.Join(s.d.Root, "blobs", "sha256", strings.TrimPrefix(other.Config.Digest, "sha256:")))
	c.Check(os.IsNotExist(err), check.Equals, true, check.Commentf("%v", err))
	// rmi of the last platform removes the image.
	s.d.DockerOK(c, "rmi", "--platform", hostP, ref)
	c.Check(s.d.Docker(c, "image", "inspect", ref).ExitCode, check.Not(check.Equals), 0)
}

// The wharf CLI's --platform on history, save, load, push and rmi acts as
// the docker CLI's does.
func (s *MultiPlatformSuite) TestWharfCLIPlatformFlags(c *check.C) {
	ix := pushIndex(c, s.reg, "mp/cli", "1", testregistry.IndexOptions{})
	host, other, hostP, otherP := hostAndOther(ix)
	ref := s.reg.Host + "/mp/cli:1"
	s.d.WharfOK(c, "pull", "--platform", hostP, ref)
	s.d.WharfOK(c, "pull", "--platform", otherP, ref)

	h := s.d.WharfOK(c, "history", "--no-trunc", "-q", "--platform", otherP, ref)
	c.Check(strings.Contains(h.Stdout, other.Config.Digest), check.Equals, true, check.Commentf("%s", h))

	dir := c.MkDir()
	both := filepath.Join(dir, "both.tar")
	s.d.WharfOK(c, "save", "--platform", hostP, "--platform", otherP, "-o", both, ref)
	blobs, _ := mpTarEntries(c, both)
	c.Check(blobs[host.Config.Digest] && blobs[other.Config.Digest] && blobs[ix.Digest()], check.Equals, true)
	one := filepath.Join(dir, "one.tar")
	s.d.WharfOK(c, "save", "--platform", otherP, "-o", one, ref)
	blobs, _ = mpTarEntries(c, one)
	c.Check(blobs[other.Config.Digest] && !blobs[host.Config.Digest], check.Equals, true)

	d2 := s.startDaemon(c)
	d2.WharfOK(c, "load", "--platform", otherP, "-i", both)
	r := d2.WharfOK(c, "inspect", "-f", "{{.Id}}", ref)
	c.Check(strings.TrimSpace(r.Stdout), check.Equals, other.Config.Digest)

	s.d.WharfOK(c, "tag", ref, s.reg.Host+"/mp/clipushed:one")
	s.d.WharfOK(c, "push", "--platform", otherP, s.reg.Host+"/mp/clipushed:one")
	ctx, cancel := fixtureCtx()
	defer cancel()
	_, _, d, err := s.reg.Client().GetManifest(ctx, "mp/clipushed", "one")
	c.Assert(err, check.IsNil)
	c.Check(d, check.Equals, other.Manifest.Digest)

	rm := s.d.WharfOK(c, "rmi", "--platform", otherP, ref)
	c.Check(rm.Stdout, check.Matches, `(?s).*Deleted: `+other.Manifest.Digest+`.*`)
	r = s.d.WharfOK(c, "inspect", "-f", "{{.Id}}", ref)
	c.Check(strings.TrimSpace(r.Stdout), check.Equals, host.Config.Digest)
	bad := s.d.Wharf(c, "inspect", "--platform", otherP, ref)
	c.Check(bad.ExitCode, check.Not(check.Equals), 0)
}

// push without --platform of an image holding some platforms of its index,
// none of them the daemon's: Engine 29 refuses (409 "multiple matching
// manifests found but no specific platform requested"); with --platform
// it pushes that one.
func (s *MultiPlatformSuite) TestPushPartialIndexWithoutHostPlatform(c *check.C) {
	ix := pushIndex(c, s.reg, "mp/partial", "1", testregistry.IndexOptions{Platforms: []ocispec.Platform{
		{OS: "linux", Architecture: runtime.GOARCH}, {OS: "linux", Architecture: "s390x"}, {OS: "linux", Architecture: "ppc64le"}}})
	ref := s.reg.Host + "/mp/partial:1"
	s.d.WharfOK(c, "pull", "--platform", "linux/s390x", ref)
	s.d.WharfOK(c, "pull", "--platform", "linux/ppc64le", ref)
	s.d.DockerOK(c, "tag", ref, s.reg.Host+"/mp/partialpush:1")
	r := s.d.Docker(c, "push", s.reg.Host+"/mp/partialpush:1")
	c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Check(r.Stdout+r.Stderr, check.Matches, `(?s).*multiple matching manifests found but no specific platform requested.*`)
	s.d.DockerOK(c, "push", "--platform", "linux/ppc64le", s.reg.Host+"/mp/partialpush:1")
	ctx, cancel := fixtureCtx()
	defer cancel()
	_, _, d, err := s.reg.Client().GetManifest(ctx, "mp/partialpush", "1")
	c.Assert(err, check.IsNil)
	c.Check(d, check.Equals, ix.Images[2].Manifest.Digest)
}
