package integration

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// ContentsSuite runs wharf ls, cat and cp through the real wharfd and wharf
// against the real registry behind token auth, on an image built here
// with archive/tar: a few files, a directory, a symlink, a hardlink, and a
// whiteout in the upper layer. Every check runs on the local image (after
// wharf pull) and on the remote one (--remote).
type ContentsSuite struct {
	suiteFixture
	reg  *testregistry.Registry
	d    *Daemon
	img  *testregistry.Image
	name string
}

func TestContentsSuite(t *testing.T) { t.Parallel(); runSuite(t, &ContentsSuite{}) }

// contentsTime is every entry's mtime: ls -l prints it.
var contentsTime = time.Date(2024, 3, 1, 10, 20, 0, 0, time.UTC)

// contentsLayers are the image's layers, bottom first.
func contentsLayers() [][]contentsEntry {
	return [][]contentsEntry{{
		{typ: tar.TypeDir, name: "bin/", mode: 0o755},
		{typ: tar.TypeReg, name: "bin/tool", mode: 0o755, body: "#!/bin/sh\necho tool\n"},
		{typ: tar.TypeLink, name: "bin/tool-link", link: "bin/tool"},
		{typ: tar.TypeDir, name: "etc/", mode: 0o755},
		{typ: tar.TypeReg, name: "etc/hosts", mode: 0o644, body: "127.0.0.1 localhost\n"},
		{typ: tar.TypeSymlink, name: "etc/os-release", link: "../usr/lib/os-release"},
		{typ: tar.TypeDir, name: "usr/", mode: 0o755},
		{typ: tar.TypeDir, name: "usr/lib/", mode: 0o755},
		{typ: tar.TypeReg, name: "usr/lib/os-release", mode: 0o644, body: "ID=wharf\n"},
		{typ: tar.TypeDir, name: "var/", mode: 0o755},
		{typ: tar.TypeReg, name: "var/old", mode: 0o600, body: "gone above"},
	}, {
		{typ: tar.TypeReg, name: "etc/motd", mode: 0o644, body: "hello\n"},
		{typ: tar.TypeReg, name: "var/.wh.old", mode: 0o600},
	}}
}

// contentsTree is `ls -R /` of the merged view.
const contentsTree = "/bin\n/bin/tool\n/bin/tool-link\n/etc\n/etc/hosts\n/etc/motd\n/etc/os-release\n/usr\n/usr/lib\n/usr/lib/os-release\n/var\n"

type contentsEntry struct {
	typ              byte
	name, link, body string
	mode             int64
}

func (s *ContentsSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken})
	s.img = contentsImage(c, contentsLayers())
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, "ct/app", "1", s.img), check.IsNil)
	s.name = s.reg.Host + "/ct/app:1"
	s.d = s.startDaemon(c)
	s.login(c)
	s.d.WharfOK(c, "pull", s.name)
}

func (s *ContentsSuite) login(c *check.C) {
	r := s.d.WharfIn(c, []byte(s.reg.Password+"\n"), "login", s.reg.Host, "-u", s.reg.Username, "--password-stdin")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
}

// contentsImage builds an OCI image whose layers hold exactly the entries
// given (gzip, as a registry serves them).
func contentsImage(c *check.C, layers [][]contentsEntry) *testregistry.Image {
	cfg := ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}, Config: ocispec.ImageConfig{Cmd: []string{"/bin/tool"}}}
	return ociImageOf(c, cfg, contentsTime, layers)
}

// ociImageOf builds an OCI image of cfg (its platform the image's, its
// rootfs the layers') whose layers hold exactly the entries given, each
// entry's mtime modTime, gzip as a registry serves them.
func ociImageOf(c *check.C, cfg ocispec.Image, modTime time.Time, layers [][]contentsEntry) *testregistry.Image {
	img := &testregistry.Image{Platform: cfg.Platform}
	cfg.RootFS = ocispec.RootFS{Type: "layers"}
	for _, l := range layers {
		var raw bytes.Buffer
		tw := tar.NewWriter(&raw)
		for _, e := range l {
			h := &tar.Header{Typeflag: e.typ, Name: e.name, Linkname: e.link, Mode: e.mode, ModTime: modTime, Uid: 0, Gid: 0, Format: tar.FormatPAX}
			if e.typ == tar.TypeSymlink {
				h.Mode = 0o777
			}
			if e.typ == tar.TypeReg {
				h.Size = int64(len(e.body))
			}
			c.Assert(tw.WriteHeader(h), check.IsNil)
			if e.typ == tar.TypeReg {
				_, err := tw.Write([]byte(e.body))
				c.Assert(err, check.IsNil)
			}
		}
		c.Assert(tw.Close(), check.IsNil)
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, err := zw.Write(raw.Bytes())
		c.Assert(err, check.IsNil)
		c.Assert(zw.Close(), check.IsNil)
		img.Layers = append(img.Layers, testregistry.NewBlob(testregistry.MediaTypeOCILayer, gz.Bytes()))
		d := digest.FromBytes(raw.Bytes())
		img.DiffIDs = append(img.DiffIDs, d.String())
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, d)
	}
	sealOCI(c, img, cfg)
	return img
}

// sealOCI sets img's config to cfg's JSON and its manifest to the OCI
// manifest of that config and img's layers.
func sealOCI(c *check.C, img *testregistry.Image, cfg ocispec.Image) {
	cb, err := json.Marshal(cfg)
	c.Assert(err, check.IsNil)
	img.Config = testregistry.NewBlob(testregistry.MediaTypeOCIConfig, cb)
	m := ocispec.Manifest{MediaType: testregistry.MediaTypeOCIManifest, Config: img.Config.Descriptor()}
	m.SchemaVersion = 2
	for _, l := range img.Layers {
		m.Layers = append(m.Layers, l.Descriptor())
	}
	mb, err := json.Marshal(m)
	c.Assert(err, check.IsNil)
	img.Manifest = testregistry.NewBlob(testregistry.MediaTypeOCIManifest, mb)
}

// modes are the two ways of reading the image: local, and --remote.
var contentsModes = []struct {
	name  string
	flags []string
}{{"local", nil}, {"remote", []string{"--remote"}}}

// wharf runs `wharf CMD [--remote] ARGS…`.
func (s *ContentsSuite) wharf(c *check.C, cmd string, flags []string, args ...string) Result {
	return s.d.Wharf(c, append(append([]string{cmd}, flags...), args...)...)
}

func (s *ContentsSuite) wharfOK(c *check.C, cmd string, flags []string, args ...string) Result {
	r := s.wharf(c, cmd, flags, args...)
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s\n--- wharfd log tail ---\n%s", r, logTail(s.d)))
	return r
}

func (s *ContentsSuite) TestLs(c *check.C) {
	s.login(c)
	for _, m := range contentsModes {
		cm := check.Commentf("%s", m.name)
		c.Assert(s.wharfOK(c, "ls", m.flags, s.name).Stdout, check.Equals, "bin\netc\nusr\nvar\n", cm)
		c.Assert(s.wharfOK(c, "ls", m.flags, s.name, "/etc").Stdout, check.Equals, "hosts\nmotd\nos-release\n", cm)
		c.Assert(s.wharfOK(c, "ls", m.flags, "-R", s.name, "/").Stdout, check.Equals, contentsTree, cm)
		// The whiteout hid var/old: var is there, and empty.
		c.Assert(s.wharfOK(c, "ls", m.flags, s.name, "/var").Stdout, check.Equals, "", cm)
		// A file is listed by its path, as ls FILE does.
		c.Assert(s.wharfOK(c, "ls", m.flags, s.name, "/etc/hosts").Stdout, check.Equals, "/etc/hosts\n", cm)

		long := s.wharfOK(c, "ls", m.flags, "-l", s.name, "/etc").Stdout
		c.Assert(long, check.Equals,
			"-rw-r--r--     0     0         20 2024-03-01 10:20 hosts\n"+
				"-rw-r--r--     0     0          6 2024-03-01 10:20 motd\n"+
				"lrwxrwxrwx     0     0         21 2024-03-01 10:20 os-release -> ../usr/lib/os-release\n", cm) // a symlink's size is its target's length, as lstat gives it
		bin := s.wharfOK(c, "ls", m.flags, "-l", s.name, "/bin").Stdout
		c.Assert(bin, check.Matches, `(?s)-rwxr-xr-x +0 +0 +20 2024-03-01 10:20 tool\n.*tool-link.*`, cm)
	}
}

func (s *ContentsSuite) TestLsLayersAndJSON(c *check.C) {
	s.login(c)
	bottom := strings.TrimPrefix(s.img.Layers[0].Digest, "sha256:")[:12]
	upper := strings.TrimPrefix(s.img.Layers[1].Digest, "sha256:")[:12]
	for _, m := range contentsModes {
		cm := check.Commentf("%s", m.name)
		layers := s.wharfOK(c, "ls", m.flags, "--layers", "-R", s.name, "/etc").Stdout
		c.Assert(layers, check.Matches, `(?s).*`+bottom+` /etc/hosts\n.*`, cm)
		c.Assert(layers, check.Matches, `(?s).*`+upper+` /etc/motd\n.*`, cm)
		// The upper layer's own entries include its whiteout.
		c.Assert(s.wharfOK(c, "ls", m.flags, "--layers", "-R", s.name, "/var").Stdout, check.Matches, `(?s).*`+upper+` /var/\.wh\.old.*`, cm)

		out := s.wharfOK(c, "ls", m.flags, "--format", "json", s.name, "/etc").Stdout
		var entries []map[string]any
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			var e map[string]any
			c.Assert(json.Unmarshal(sc.Bytes(), &e), check.IsNil, check.Commentf("%s: line %q", m.name, sc.Text()))
			entries = append(entries, e)
		}
		c.Assert(entries, check.HasLen, 3, cm)
		hosts, link := entries[0], entries[2]
		c.Assert(hosts["Path"], check.Equals, "/etc/hosts", cm)
		c.Assert(hosts["Type"], check.Equals, "file", cm)
		c.Assert(hosts["Mode"], check.Equals, float64(0o644), cm)
		c.Assert(hosts["Size"], check.Equals, float64(20), cm)
		c.Assert(hosts["Uid"], check.Equals, float64(0), cm)
		c.Assert(hosts["Gid"], check.Equals, float64(0), cm)
		c.Assert(hosts["ModTime"], check.Equals, contentsTime.Format(time.RFC3339), cm)
		c.Assert(hosts["Layer"], check.Equals, s.img.Layers[0].Digest, cm)
		c.Assert(entries[1]["Layer"], check.Equals, s.img.Layers[1].Digest, cm)
		c.Assert(link["Type"], check.Equals, "symlink", cm)
		c.Assert(link["Linkname"], check.Equals, "../usr/lib/os-release", cm)
	}
}

func (s *ContentsSuite) TestCat(c *check.C) {
	s.login(c)
	for _, m := range contentsModes {
		cm := check.Commentf("%s", m.name)
		c.Assert(s.wharfOK(c, "cat", m.flags, s.name, "/etc/hosts").Stdout, check.Equals, "127.0.0.1 localhost\n", cm)
		// A symlink is followed inside the image.
		c.Assert(s.wharfOK(c, "cat", m.flags, s.name, "/etc/os-release").Stdout, check.Equals, "ID=wharf\n", cm)
		c.Assert(s.wharfOK(c, "cat", m.flags, s.name, "/bin/tool-link").Stdout, check.Equals, "#!/bin/sh\necho tool\n", cm)
		dir := s.wharf(c, "cat", m.flags, s.name, "/etc")
		c.Assert(dir.ExitCode, check.Equals, 1, cm)
		c.Assert(dir.Stderr, check.Matches, `(?s).*/etc in .* is a directory.*`, cm)
		// The whiteout removed it.
		gone := s.wharf(c, "cat", m.flags, s.name, "/var/old")
		c.Assert(gone.ExitCode, check.Equals, 1, cm)
		c.Assert(gone.Stderr, check.Matches, `(?s).*/var/old.*`, cm)
	}
}

func (s *ContentsSuite) TestCp(c *check.C) {
	s.login(c)
	for _, m := range contentsModes {
		cm := check.Commentf("%s", m.name)
		dest := c.MkDir()
		s.wharfOK(c, "cp", m.flags, s.name+":/etc", dest)
		c.Assert(readFile(filepath.Join(dest, "etc", "hosts")), check.Equals, "127.0.0.1 localhost\n", cm)
		c.Assert(readFile(filepath.Join(dest, "etc", "motd")), check.Equals, "hello\n", cm)
		l, err := os.Readlink(filepath.Join(dest, "etc", "os-release"))
		c.Assert(err, check.IsNil, cm)
		c.Assert(l, check.Equals, "../usr/lib/os-release", cm)

		// A directory to a new name; its hardlink stays one, modes kept.
		s.wharfOK(c, "cp", m.flags, s.name+":/bin", filepath.Join(dest, "newbin"))
		t1, err := os.Stat(filepath.Join(dest, "newbin", "tool"))
		c.Assert(err, check.IsNil, cm)
		t2, err := os.Stat(filepath.Join(dest, "newbin", "tool-link"))
		c.Assert(err, check.IsNil, cm)
		c.Assert(t1.Mode().Perm(), check.Equals, os.FileMode(0o755), cm)
		c.Assert(t1.Sys().(*syscall.Stat_t).Ino, check.Equals, t2.Sys().(*syscall.Stat_t).Ino, cm)

		// A file to a new name.
		s.wharfOK(c, "cp", m.flags, s.name+":/etc/hosts", filepath.Join(dest, "h"))
		c.Assert(readFile(filepath.Join(dest, "h")), check.Equals, "127.0.0.1 localhost\n", cm)

		// - is the tar.
		tr := s.wharfOK(c, "cp", m.flags, s.name+":/etc", "-")
		names := tarNames(c, []byte(tr.Stdout))
		sort.Strings(names)
		c.Assert(names, check.DeepEquals, []string{"etc/", "etc/hosts", "etc/motd", "etc/os-release"}, cm)
	}
}

func (s *ContentsSuite) TestMissingPathMissingImageAndMalformedName(c *check.C) {
	s.login(c)
	for _, m := range contentsModes {
		cm := check.Commentf("%s", m.name)
		for _, cmd := range [][]string{{"ls", s.name, "/nope"}, {"cat", s.name, "/nope"}, {"cp", s.name + ":/nope", c.MkDir()}} {
			r := s.wharf(c, cmd[0], m.flags, cmd[1:]...)
			c.Assert(r.ExitCode, check.Equals, 1, check.Commentf("%s: %s", m.name, r))
			c.Assert(r.Stderr, check.Matches, `(?s).*/nope.*`, check.Commentf("%s: %s", m.name, r))
		}
		missing := s.wharf(c, "ls", m.flags, s.reg.Host+"/ct/nosuch:1", "/")
		c.Assert(missing.ExitCode, check.Equals, 1, check.Commentf("%s", missing))
		c.Assert(missing.Stderr, check.Matches, `(?is).*no such image.*`, check.Commentf("%s", missing))
		bad := s.wharf(c, "ls", m.flags, "Bad::Name", "/")
		c.Assert(bad.ExitCode, check.Equals, 1, check.Commentf("%s", bad))
		c.Assert(bad.Stderr, check.Matches, `(?is).*(invalid reference|repository name).*`, cm)
	}
	// The API answers 404 before any line for a missing path.
	r := s.d.Req(c, "GET", "/wharf/images/"+s.name+"/files?path=/nope", nil)
	c.Assert(r.Status, check.Equals, 404, check.Commentf("%s", r))
}

// A private repository is read with the caller's credentials only: without
// a login the registry refuses, with one it answers; the daemon's log never
// holds the password.
func (s *ContentsSuite) TestPrivateRepositoryNeedsLogin(c *check.C) {
	s.d.WharfOK(c, "logout", s.reg.Host)
	anon := s.wharf(c, "ls", []string{"--remote"}, s.name, "/")
	c.Assert(anon.ExitCode, check.Equals, 1, check.Commentf("%s", anon))
	c.Assert(anon.Stderr, check.Matches, `(?is).*(unauthorized|authentication required|denied|401).*`, check.Commentf("%s", anon))
	s.login(c)
	c.Assert(s.wharfOK(c, "ls", []string{"--remote"}, s.name, "/").Stdout, check.Equals, "bin\netc\nusr\nvar\n")
	c.Assert(strings.Contains(s.d.Log(), s.reg.Password), check.Equals, false, check.Commentf("the daemon's log holds the password"))
}

// Once a remote image's index is built, listing it again reads no blob,
// and reading a file one range at most.
func (s *ContentsSuite) TestWarmRemoteIndexListsWithNoBlobAndCatsWithOneRange(c *check.C) {
	s.login(c)
	s.wharfOK(c, "ls", []string{"--remote"}, "-R", s.name, "/")
	s.reg.ResetCounters()
	c.Assert(s.wharfOK(c, "ls", []string{"--remote"}, "-R", s.name, "/").Stdout, check.Equals, contentsTree)
	var blobs []string
	for _, l := range s.reg.RequestLog() {
		if strings.Contains(l, "/blobs/") {
			blobs = append(blobs, l)
		}
	}
	c.Assert(blobs, check.HasLen, 0, check.Commentf("blob requests of a warm listing: %v", blobs))

	// A file of the bottom layer, the index warm: at most one blob
	// request (a single range from the nearest checkpoint).
	s.reg.ResetCounters()
	c.Assert(s.wharfOK(c, "cat", []string{"--remote"}, s.name, "/usr/lib/os-release").Stdout, check.Equals, "ID=wharf\n")
	blobs = nil
	for _, l := range s.reg.RequestLog() {
		if strings.Contains(l, "/blobs/") {
			blobs = append(blobs, l)
		}
	}
	c.Assert(len(blobs) <= 1, check.Equals, true, check.Commentf("blob requests of a warm cat: %v", blobs))
}

// A warm remote read starts on the image the tag named the last time,
// while the registry is asked again: once the tag has moved, the caller
// gets the new image's files, and nothing of the old one's.
func (s *ContentsSuite) TestWarmRemoteReadFollowsAMovedTag(c *check.C) {
	s.login(c)
	version := func(v string) *testregistry.Image {
		return contentsImage(c, [][]contentsEntry{{
			{typ: tar.TypeDir, name: "etc/", mode: 0o755},
			{typ: tar.TypeReg, name: "etc/only-" + v, mode: 0o644, body: v},
			{typ: tar.TypeReg, name: "etc/version", mode: 0o644, body: v + "\n"},
		}})
	}
	ctx, cancel := fixtureCtx()
	defer cancel()
	name := s.reg.Host + "/ct/moving:t"
	c.Assert(s.reg.Client().PushImage(ctx, "ct/moving", "t", version("one")), check.IsNil)
	for i := 0; i < 2; i++ { // cold, then warm: the second read starts ahead
		c.Assert(s.wharfOK(c, "ls", []string{"--remote"}, "-R", name, "/").Stdout, check.Equals, "/etc\n/etc/only-one\n/etc/version\n")
		c.Assert(s.wharfOK(c, "cat", []string{"--remote"}, name, "/etc/version").Stdout, check.Equals, "one\n")
	}

	c.Assert(s.reg.Client().PushImage(ctx, "ct/moving", "t", version("two")), check.IsNil)
	for i := 0; i < 2; i++ {
		c.Assert(s.wharfOK(c, "ls", []string{"--remote"}, "-R", name, "/").Stdout, check.Equals, "/etc\n/etc/only-two\n/etc/version\n")
		c.Assert(s.wharfOK(c, "cat", []string{"--remote"}, name, "/etc/version").Stdout, check.Equals, "two\n")
		gone := s.wharf(c, "cat", []string{"--remote"}, name, "/etc/only-one")
		c.Assert(gone.ExitCode, check.Equals, 1, check.Commentf("%s", gone))
		c.Assert(gone.Stdout, check.Equals, "")
	}
}

// A config whose diff ID is not its layer's tar: a remote read refuses the
// image, as a pull does, and says why, cold and once the index is built.
func (s *ContentsSuite) TestRemoteReadRefusesAConfigThatLiesAboutADiffID(c *check.C) {
	s.login(c)
	img := contentsImage(c, [][]contentsEntry{{{typ: tar.TypeReg, name: "etc/lie", mode: 0o644, body: c.TestName()}}})
	img = withDiffIDs(c, img, []digest.Digest{digest.FromString("not this layer's tar")})
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, "ct/lie", "1", img), check.IsNil)
	name := s.reg.Host + "/ct/lie:1"
	for i := 0; i < 2; i++ {
		for _, args := range [][]string{{"-R", name, "/"}, {name, "/etc/lie"}} {
			cmd := "ls"
			if len(args) == 2 {
				cmd = "cat"
			}
			r := s.wharf(c, cmd, []string{"--remote"}, args...)
			c.Assert(r.ExitCode, check.Equals, 1, check.Commentf("%s %v: %s", cmd, args, r))
			c.Assert(r.Stdout, check.Equals, "")
			c.Assert(r.Stderr, check.Matches, `(?s).*diff ID mismatch.*`, check.Commentf("%s", r))
		}
	}
}

// withDiffIDs is img with its config's rootfs diff IDs replaced by ids.
func withDiffIDs(c *check.C, img *testregistry.Image, ids []digest.Digest) *testregistry.Image {
	var cfg ocispec.Image
	c.Assert(json.Unmarshal(img.Config.Data, &cfg), check.IsNil)
	cfg.RootFS.DiffIDs = ids
	out := *img
	out.DiffIDs = nil
	for _, d := range ids {
		out.DiffIDs = append(out.DiffIDs, d.String())
	}
	sealOCI(c, &out, cfg)
	return &out
}

// A cold cat reads each layer once, whole, and keeps the file in that pass:
// no range request follows; a second cat of it reads no blob at all.
func (s *ContentsSuite) TestColdRemoteCatReadsEachLayerOnce(c *check.C) {
	s.login(c)
	img := contentsImage(c, [][]contentsEntry{
		{{typ: tar.TypeReg, name: "etc/cold", mode: 0o644, body: "cold cat " + c.TestName()}},
		{{typ: tar.TypeReg, name: "etc/other", mode: 0o644, body: "above"}},
	})
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, "ct/cold", "1", img), check.IsNil)
	name := s.reg.Host + "/ct/cold:1"
	s.reg.ResetCounters()
	c.Assert(s.wharfOK(c, "cat", []string{"--remote"}, name, "/etc/cold").Stdout, check.Equals, "cold cat "+c.TestName())
	gets := map[string]int{}
	ranges := s.reg.Counter.HeaderValues("Range")
	for i, l := range s.reg.Counter.Requests() {
		if strings.Contains(l, "/blobs/") {
			gets[l]++
			c.Assert(ranges[i], check.Equals, "", check.Commentf("a range request after the cold pass: %s", l))
		}
	}
	// The config and the two layers, each once.
	c.Assert(gets, check.HasLen, 3, check.Commentf("%v", gets))
	for l, n := range gets {
		c.Assert(n, check.Equals, 1, check.Commentf("%s read %d times", l, n))
	}
	s.reg.ResetCounters()
	c.Assert(s.wharfOK(c, "cat", []string{"--remote"}, name, "/etc/cold").Stdout, check.Equals, "cold cat "+c.TestName())
	for _, l := range s.reg.Counter.Requests() {
		c.Assert(strings.Contains(l, "/blobs/"), check.Equals, false, check.Commentf("a blob read by the second cat: %s", l))
	}
}

// The docker CLI still talks to the daemon as before.
func (s *ContentsSuite) TestDockerCLIUnaffected(c *check.C) {
	r := s.d.DockerOK(c, "image", "ls", "--format", "{{.Repository}}:{{.Tag}}")
	c.Assert(r.Stdout, check.Matches, fmt.Sprintf(`(?s).*%s.*`, regexpQuote(s.name)))
}

// An image whose layer plants symlinks out of the root, files through them
// and a symlink loop: the image's view resolves each path inside its own
// root (as a layer applied in a chroot would), wharf cp of it writes those
// files inside DEST and nothing beside it, and cat of the loop fails.
func (s *ContentsSuite) TestCpNeverWritesOutsideDest(c *check.C) {
	s.login(c)
	evil := contentsImage(c, [][]contentsEntry{{
		{typ: tar.TypeReg, name: "ok", mode: 0o644, body: "fine"},
		{typ: tar.TypeSymlink, name: "up", link: "../"},
		{typ: tar.TypeSymlink, name: "abs", link: "/tmp"},
		{typ: tar.TypeReg, name: "up/escaped", mode: 0o644, body: "outside"},
		{typ: tar.TypeReg, name: "abs/wharf-escaped", mode: 0o644, body: "outside"},
		{typ: tar.TypeSymlink, name: "loop1", link: "loop2"},
		{typ: tar.TypeSymlink, name: "loop2", link: "/loop1"},
	}})
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, "ct/evil", "1", evil), check.IsNil)
	name := s.reg.Host + "/ct/evil:1"
	for _, m := range contentsModes {
		if m.name == "local" {
			s.d.WharfOK(c, "pull", name)
		}
		parent := c.MkDir()
		dest := filepath.Join(parent, "dest")
		r := s.wharfOK(c, "cp", m.flags, name+":/", dest)
		entries, err := os.ReadDir(parent)
		c.Assert(err, check.IsNil)
		c.Assert(entries, check.HasLen, 1, check.Commentf("%s: written beside DEST: %v\n%s", m.name, entries, r))
		c.Assert(readFile(filepath.Join(dest, "ok")), check.Equals, "fine", check.Commentf("%s", m.name))
		// "up/escaped" is /escaped in the image, "abs/wharf-escaped" /tmp/wharf-escaped.
		c.Assert(readFile(filepath.Join(dest, "escaped")), check.Equals, "outside", check.Commentf("%s", m.name))
		c.Assert(readFile(filepath.Join(dest, "tmp", "wharf-escaped")), check.Equals, "outside", check.Commentf("%s", m.name))
		l, err := os.Readlink(filepath.Join(dest, "abs"))
		c.Assert(err, check.IsNil)
		c.Assert(l, check.Equals, "/tmp", check.Commentf("%s", m.name))
		c.Assert(fileExists("/tmp/wharf-escaped"), check.Equals, false, check.Commentf("%s: written through the absolute link", m.name))
		// A loop is copied as the links it is, and cat of it is an error.
		l, err = os.Readlink(filepath.Join(dest, "loop2"))
		c.Assert(err, check.IsNil)
		c.Assert(l, check.Equals, "/loop1")
		loop := s.wharf(c, "cat", m.flags, name, "/loop1")
		c.Assert(loop.ExitCode, check.Equals, 1, check.Commentf("%s", loop))
		c.Assert(loop.Stderr, check.Matches, `(?is).*(too many levels|loop).*`, check.Commentf("%s", loop))
	}
}

// --platform picks the platform manifest of a multi-platform image (a
// Docker manifest list here): each platform's entries name its own layer.
func (s *ContentsSuite) TestPlatformOfAMultiPlatformImage(c *check.C) {
	s.login(c)
	ix := pushIndex(c, s.reg, "ct/multi", "1", testregistry.IndexOptions{Docker: true})
	name := s.reg.Host + "/ct/multi:1"
	s.d.WharfOK(c, "pull", "--platform", "linux/arm64/v8", name)
	for _, m := range contentsModes {
		for i, p := range []string{"linux/amd64", "linux/arm64/v8"} {
			if m.name == "local" && i == 0 {
				continue // only arm64 was pulled
			}
			out := s.wharfOK(c, "ls", m.flags, "--platform", p, "--format", "json", "-R", name, "/").Stdout
			var e map[string]any
			c.Assert(json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &e), check.IsNil, check.Commentf("%s %s: %q", m.name, p, out))
			c.Assert(e["Layer"], check.Equals, ix.Images[i].Layers[0].Digest, check.Commentf("%s %s", m.name, p))
		}
	}
	bad := s.wharf(c, "ls", []string{"--remote"}, "--platform", "linux/s390x", name, "/")
	c.Assert(bad.ExitCode, check.Equals, 1, check.Commentf("%s", bad))
}

// A local image is read from the store: listing it, reading a file and
// copying it send no request to its registry.
func (s *ContentsSuite) TestLocalImageAsksNoRegistry(c *check.C) {
	s.login(c)
	s.reg.ResetCounters()
	s.wharfOK(c, "ls", nil, "-R", s.name, "/")
	s.wharfOK(c, "cat", nil, s.name, "/etc/os-release")
	s.wharfOK(c, "cp", nil, s.name+":/etc", "-")
	c.Assert(s.reg.RequestLog(), check.HasLen, 0)
}

// HEAD …/archive answers the path's stat alone, in dockerd's header
// (base64 of container.PathStat's JSON); a symlink's LinkTarget is its
// target resolved inside the image.
func (s *ContentsSuite) TestArchiveStatHeader(c *check.C) {
	for _, q := range []string{"", "&remote=1"} {
		r := s.d.Req(c, http.MethodHead, "/v1.50/wharf/images/"+s.name+"/archive?path=/etc/os-release"+q, nil, "X-Registry-Auth", auth(s.reg))
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%q: %s", q, r))
		c.Assert(r.Body, check.HasLen, 0)
		raw, err := base64.StdEncoding.DecodeString(r.Header.Get("X-Docker-Container-Path-Stat"))
		c.Assert(err, check.IsNil)
		var st container.PathStat
		c.Assert(json.Unmarshal(raw, &st), check.IsNil, check.Commentf("%s", raw))
		c.Assert(st.Name, check.Equals, "os-release", check.Commentf("%q", q))
		c.Assert(st.Mode&os.ModeSymlink, check.Not(check.Equals), os.FileMode(0), check.Commentf("%q", q))
		c.Assert(st.LinkTarget, check.Equals, "/usr/lib/os-release", check.Commentf("%q", q))
		c.Assert(st.Mtime.Equal(contentsTime), check.Equals, true, check.Commentf("%q: %v", q, st.Mtime))
	}
	r := s.d.Req(c, http.MethodHead, "/v1.50/wharf/images/"+s.name+"/archive?path=/nope", nil)
	c.Assert(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s", r))
}
