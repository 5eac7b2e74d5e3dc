package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// OCIReadersSuite reads wharfd's data-root with OCI tools, as users do:
// skopeo's oci: transport (Debian's skopeo) and crane (.cache/bin/crane,
// `crane push DIR` reads an OCI layout). The records live in
// wharf/meta.db; index.json is derived from them (graph/store/BOLT.md
// "index.json"): complete once wharfd has stopped, and current after `wharf
// system export-index` while it runs (issue 22).
type OCIReadersSuite struct {
	suiteFixture
	reg *testregistry.Registry
}

func TestOCIReadersSuite(t *testing.T) { t.Parallel(); runSuite(t, &OCIReadersSuite{}) }

func (s *OCIReadersSuite) SetUpSuite(c *check.C) {
	skopeoPath(c)
	s.reg = s.startRegistry(c, testregistry.Options{})
}

// cranePath is .cache/bin/crane (make crane), or crane on PATH.
func cranePath(c *check.C) string {
	root, err := testregistry.RepoRoot()
	c.Assert(err, check.IsNil)
	if p := filepath.Join(root, ".cache", "bin", "crane"); isExecutableFile(p) {
		return p
	}
	return requireClient(c, "crane", "crane (make crane, into .cache/bin)")
}

func (s *OCIReadersSuite) skopeo(c *check.C, d *Daemon, args ...string) Result {
	env := append(d.cliEnv(), "TMPDIR="+c.MkDir())
	return runCmd(c, nil, env, skopeoPath(c), append([]string{"--insecure-policy"}, args...)...)
}

func (s *OCIReadersSuite) skopeoOK(c *check.C, d *Daemon, args ...string) Result {
	r := s.skopeo(c, d, args...)
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	return r
}

// ociIndex is what an OCI tool reads of index.json.
type ociIndex struct {
	Manifests []struct {
		MediaType   string
		Digest      string
		Annotations map[string]string
	}
}

func readIndex(c *check.C, root string) ociIndex {
	var idx ociIndex
	b, err := os.ReadFile(filepath.Join(root, "index.json"))
	c.Assert(err, check.IsNil)
	c.Assert(json.Unmarshal(b, &idx), check.IsNil)
	return idx
}

// archiveConfig is the image ID inside a docker-archive written by skopeo:
// the manifest's config digest (skopeo inspect --raw).
func (s *OCIReadersSuite) archiveConfig(c *check.C, d *Daemon, tarPath string) string {
	raw := s.skopeoOK(c, d, "inspect", "--raw", "docker-archive:"+tarPath)
	var m struct{ Config struct{ Digest string } }
	c.Assert(json.Unmarshal([]byte(raw.Stdout), &m), check.IsNil, check.Commentf("%s", raw))
	return m.Config.Digest
}

// TestSkopeoAndCraneReadTheDataRoot: images pulled into wharfd (OCI and
// Docker media types, a multi-platform index, one untagged) are read from
// the data-root by skopeo copy oci:ROOT:TAG (index.json's ref.name
// annotation is the tag alone, as containerd writes it) and by crane push
// ROOT --index, after wharfd stopped, and while it runs right after `wharf
// system export-index`.
func (s *OCIReadersSuite) TestSkopeoAndCraneReadTheDataRoot(c *check.C) {
	crane := cranePath(c)
	reg := s.reg.Host
	oci := pushImage(c, s.reg, "readers/oci", "1.0", testregistry.ImageOptions{Layers: 2})
	docker := pushImage(c, s.reg, "readers/docker", "2.0", testregistry.ImageOptions{Docker: true, Layers: 2})
	ix := pushIndex(c, s.reg, "readers/multi", "3.0", testregistry.IndexOptions{})
	first := pushImage(c, s.reg, "readers/a", "shared", testregistry.ImageOptions{})
	second := pushImage(c, s.reg, "readers/b", "shared", testregistry.ImageOptions{})

	d := s.startDaemon(c)
	for _, ref := range []string{"readers/oci:1.0", "readers/docker:2.0", "readers/multi:3.0", "readers/a:shared", "readers/b:shared"} {
		d.WharfOK(c, "pull", reg+"/"+ref)
	}
	untagged := d.Import(c, "")
	c.Assert(untagged, check.Matches, "sha256:.*")
	d.Stop(c)

	// Stopped: index.json is complete.
	idx := readIndex(c, d.Root)
	c.Assert(idx.Manifests, check.HasLen, 6, check.Commentf("%+v", idx))
	names := map[string]string{} // ref.name → full name
	for _, m := range idx.Manifests {
		if n, ok := m.Annotations["org.opencontainers.image.ref.name"]; ok {
			names[m.Annotations["io.containerd.image.name"]] = n
		}
	}
	c.Assert(names[reg+"/readers/oci:1.0"], check.Equals, "1.0")
	c.Assert(names[reg+"/readers/multi:3.0"], check.Equals, "3.0")

	out := c.MkDir()
	// skopeo copy oci:ROOT:TAG: the OCI image and the index (skopeo picks
	// the host's platform from it).
	s.skopeoOK(c, d, "copy", "oci:"+d.Root+":1.0", "docker-archive:"+filepath.Join(out, "oci.tar"))
	c.Assert(s.archiveConfig(c, d, filepath.Join(out, "oci.tar")), check.Equals, oci.ID())
	s.skopeoOK(c, d, "copy", "oci:"+d.Root+":3.0", "docker-archive:"+filepath.Join(out, "multi.tar"))
	hostID := s.archiveConfig(c, d, filepath.Join(out, "multi.tar"))
	var platformIDs []string
	for _, im := range ix.Images {
		platformIDs = append(platformIDs, im.ID())
	}
	c.Assert(strings.Join(platformIDs, " "), check.Matches, ".*"+hostID+".*")
	// An image pulled with Docker media types: what does skopeo make of it?
	r := s.skopeo(c, d, "copy", "oci:"+d.Root+":2.0", "docker-archive:"+filepath.Join(out, "docker.tar"))
	c.Logf("skopeo copy of a Docker-media-type entry: exit %d: %s", r.ExitCode, strings.TrimSpace(r.Stderr))
	if r.ExitCode == 0 {
		c.Assert(s.archiveConfig(c, d, filepath.Join(out, "docker.tar")), check.Equals, docker.ID())
	}
	// A tag two repositories share: skopeo takes one of them.
	s.skopeoOK(c, d, "copy", "oci:"+d.Root+":shared", "docker-archive:"+filepath.Join(out, "shared.tar"))
	sharedID := s.archiveConfig(c, d, filepath.Join(out, "shared.tar"))
	c.Assert(sharedID == first.ID() || sharedID == second.ID(), check.Equals, true)
	var firstShared string
	for _, m := range idx.Manifests {
		if m.Annotations["org.opencontainers.image.ref.name"] == "shared" {
			firstShared = m.Digest
			break
		}
	}
	c.Logf("shared tag: skopeo took %s; index.json's first \"shared\" entry is manifest %s (a: %s, b: %s)",
		sharedID, firstShared, first.Manifest.Digest, second.Manifest.Digest)
	if sharedID == first.ID() {
		c.Assert(firstShared, check.Equals, first.Manifest.Digest)
	} else {
		c.Assert(firstShared, check.Equals, second.Manifest.Digest)
	}

	// crane push ROOT REF --index reads every entry of index.json and
	// every blob they name: the multi-platform image, pulled for one
	// platform, names the other platforms' manifests, which are not
	// stored, so crane refuses this data-root (with or without
	// --platform). Logged, not asserted: it is the layout's content, the
	// same before and after meta.db. Below, without that image, it works.
	cr := runCmd(c, nil, d.cliEnv(), crane, "push", "--insecure", d.Root, reg+"/readers/all:layout", "--index")
	c.Logf("crane push of a data-root holding a one-platform pull of an index: exit %d: %s", cr.ExitCode, strings.TrimSpace(cr.Stderr))

	// Running: a change reaches index.json through export-index at once.
	d.Start(c)
	late := pushImage(c, s.reg, "readers/late", "4.0", testregistry.ImageOptions{})
	d.WharfOK(c, "pull", reg+"/readers/late:4.0")
	exp := d.WharfOK(c, "system", "export-index", "--json")
	var rep struct {
		Path    string
		Entries int
	}
	c.Assert(json.Unmarshal([]byte(exp.Stdout), &rep), check.IsNil, check.Commentf("%s", exp))
	c.Assert(rep.Path, check.Equals, filepath.Join(d.Root, "index.json"))
	c.Assert(rep.Entries, check.Equals, 7)
	c.Assert(readIndex(c, d.Root).Manifests, check.HasLen, 7)
	s.skopeoOK(c, d, "copy", "oci:"+d.Root+":4.0", "docker-archive:"+filepath.Join(out, "late.tar"))
	c.Assert(s.archiveConfig(c, d, filepath.Join(out, "late.tar")), check.Equals, late.ID())
	plain := d.WharfOK(c, "system", "export-index")
	c.Assert(plain.Stdout, check.Equals, filepath.Join(d.Root, "index.json")+": 7 entries\n")

	// crane push ROOT REF --index once the partial multi-platform image is
	// gone: every entry, in index.json's order, as one index.
	d.WharfOK(c, "rmi", reg+"/readers/multi:3.0")
	exp = d.WharfOK(c, "system", "export-index", "--json")
	c.Assert(json.Unmarshal([]byte(exp.Stdout), &rep), check.IsNil, check.Commentf("%s", exp))
	c.Assert(rep.Entries, check.Equals, 6)
	idx = readIndex(c, d.Root)
	cr = runCmd(c, nil, d.cliEnv(), crane, "push", "--insecure", d.Root, reg+"/readers/all:layout", "--index")
	c.Assert(cr.ExitCode, check.Equals, 0, check.Commentf("%s", cr))
	mr := runCmd(c, nil, d.cliEnv(), crane, "manifest", "--insecure", reg+"/readers/all:layout")
	c.Assert(mr.ExitCode, check.Equals, 0, check.Commentf("%s", mr))
	var pushed ociIndex
	c.Assert(json.Unmarshal([]byte(mr.Stdout), &pushed), check.IsNil, check.Commentf("%s", mr))
	c.Assert(pushed.Manifests, check.HasLen, len(idx.Manifests))
	for i, m := range pushed.Manifests {
		c.Assert(m.Digest, check.Equals, idx.Manifests[i].Digest)
	}
	var withUntagged bool
	for _, m := range idx.Manifests {
		if len(m.Annotations) == 0 {
			withUntagged = true // the imported image: an entry with no name
		}
	}
	c.Assert(withUntagged, check.Equals, true)
	// And crane reads one image of it back from the registry by digest.
	cfg := runCmd(c, nil, d.cliEnv(), crane, "config", "--insecure", reg+"/readers/all@"+oci.Manifest.Digest)
	c.Assert(cfg.ExitCode, check.Equals, 0, check.Commentf("%s", cfg))
	c.Assert(digestOf([]byte(cfg.Stdout)), check.Equals, oci.ID())
	rep2, code := systemCheck(c, d)
	c.Assert(code, check.Equals, 0, check.Commentf("%s", rep2))
	d.Stop(c)
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
