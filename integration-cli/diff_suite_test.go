package integration

import (
	"archive/tar"
	"encoding/json"
	"math/rand"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// DiffSuite runs wharf diff through the real wharfd and wharf against the
// real registry behind token auth, on two versions of an image built here:
// one base layer they share, and a top layer each in which one package's
// dpkg status entry and one file differ.
type DiffSuite struct {
	suiteFixture
	reg      *testregistry.Registry
	d        *Daemon
	v1, v2   *testregistry.Image
	n1, n2   string
	sizes    map[string]int64 // blob digest → size, of every blob pushed
	baseBlob string           // the shared layer's digest
	// r1 and r2 are another pair, their base never pulled.
	r1, r2 *testregistry.Image
}

func TestDiffSuite(t *testing.T) { t.Parallel(); runSuite(t, &DiffSuite{}) }

var diffTime = time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC)

// diffDpkgStatus is a dpkg status file as dpkg writes it, libfoo1 at version.
func diffDpkgStatus(version string) string {
	stanza := func(name, ver, arch, desc string) string {
		return "Package: " + name + "\nStatus: install ok installed\nPriority: optional\nSection: libs\n" +
			"Installed-Size: 120\nMaintainer: Wharf Tests <tests@example.com>\nArchitecture: " + arch + "\n" +
			"Version: " + ver + "\nDescription: " + desc + "\n " + desc + ", for the diff's tests.\n"
	}
	return strings.Join([]string{
		stanza("base-files", "12.4+deb12u5", "amd64", "Debian base system miscellaneous files"),
		stanza("libfoo1", version, "amd64", "foo library"),
		stanza("zlib1g", "1:1.2.13.dfsg-1", "amd64", "compression library - runtime"),
	}, "\n")
}

// diffBaseLayer is a base layer; seed makes its bytes (and digest) its
// own.
func diffBaseLayer(seed int64) []contentsEntry {
	// 256 KiB that does not compress: a base whose bytes a diff must not
	// download are worth counting.
	noise := make([]byte, 256<<10)
	rand.New(rand.NewSource(seed)).Read(noise)
	return []contentsEntry{
		{typ: tar.TypeDir, name: "bin/", mode: 0o755},
		{typ: tar.TypeReg, name: "bin/sh", mode: 0o755, body: string(noise)},
		{typ: tar.TypeDir, name: "etc/", mode: 0o755},
		{typ: tar.TypeReg, name: "etc/os-release", mode: 0o644, body: "ID=debian\nVERSION_ID=\"12\"\n"},
		{typ: tar.TypeReg, name: "etc/hostname", mode: 0o644, body: "wharf\n"},
	}
}

func diffTopLayer(pkgVersion, conf string) []contentsEntry {
	return []contentsEntry{
		{typ: tar.TypeDir, name: "etc/", mode: 0o755},
		{typ: tar.TypeReg, name: "etc/app.conf", mode: 0o644, body: conf},
		{typ: tar.TypeDir, name: "usr/", mode: 0o755},
		{typ: tar.TypeDir, name: "usr/share/", mode: 0o755},
		{typ: tar.TypeDir, name: "usr/share/doc/", mode: 0o755},
		{typ: tar.TypeReg, name: "usr/share/doc/README", mode: 0o644, body: "the same in both\n"},
		{typ: tar.TypeDir, name: "var/", mode: 0o755},
		{typ: tar.TypeDir, name: "var/lib/", mode: 0o755},
		{typ: tar.TypeDir, name: "var/lib/dpkg/", mode: 0o755},
		{typ: tar.TypeReg, name: "var/lib/dpkg/status", mode: 0o644, body: diffDpkgStatus(pkgVersion)},
	}
}

// diffImage builds an OCI image of the given layers with labels.
func diffImage(c *check.C, labels map[string]string, layers ...[]contentsEntry) *testregistry.Image {
	created := diffTime
	cfg := ocispec.Image{Created: &created, Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"},
		Config: ocispec.ImageConfig{Cmd: []string{"/bin/sh"}, Labels: labels}}
	return ociImageOf(c, cfg, diffTime, layers)
}

func (s *DiffSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken})
	label := func(rev string) map[string]string {
		return map[string]string{"org.opencontainers.image.source": "https://github.com/wharf-tests/app", "org.opencontainers.image.revision": rev}
	}
	base := diffBaseLayer(34)
	s.v1 = diffImage(c, label("1111111"), base, diffTopLayer("1.0-1", "mode=one\n"))
	s.v2 = diffImage(c, label("2222222"), base, diffTopLayer("1.1-1", "mode=two\n"))
	other := diffBaseLayer(35)
	s.r1 = diffImage(c, label("1111111"), other, diffTopLayer("1.0-1", "mode=one\n"))
	s.r2 = diffImage(c, label("2222222"), other, diffTopLayer("1.1-1", "mode=two\n"))
	// The package database in the base of one and the top of the other:
	// the mixed case, whose packages need the base's.
	withStatus := append(diffBaseLayer(36), contentsEntry{typ: tar.TypeDir, name: "var/", mode: 0o755},
		contentsEntry{typ: tar.TypeDir, name: "var/lib/", mode: 0o755}, contentsEntry{typ: tar.TypeDir, name: "var/lib/dpkg/", mode: 0o755},
		contentsEntry{typ: tar.TypeReg, name: "var/lib/dpkg/status", mode: 0o644, body: diffDpkgStatus("1.0-1")})
	m1 := diffImage(c, nil, withStatus, diffTopLayer("1.0-1", "mode=one\n")[:2])
	m2 := diffImage(c, nil, withStatus, diffTopLayer("1.1-1", "mode=two\n"))
	c.Assert(s.v1.Layers[0].Digest, check.Equals, s.v2.Layers[0].Digest)
	s.baseBlob = s.v1.Layers[0].Digest
	s.sizes = map[string]int64{}
	for _, img := range []*testregistry.Image{s.v1, s.v2, s.r1, s.r2, m1, m2} {
		for _, b := range append([]testregistry.Blob{img.Config}, img.Layers...) {
			s.sizes[b.Digest] = int64(len(b.Data))
		}
	}
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, "dt/app", "1", s.v1), check.IsNil)
	c.Assert(s.reg.Client().PushImage(ctx, "dt/app", "2", s.v2), check.IsNil)
	c.Assert(s.reg.Client().PushImage(ctx, "dt/self", "1", s.v1), check.IsNil)
	c.Assert(s.reg.Client().PushImage(ctx, "dt/remote", "1", s.r1), check.IsNil)
	c.Assert(s.reg.Client().PushImage(ctx, "dt/remote", "2", s.r2), check.IsNil)
	c.Assert(s.reg.Client().PushImage(ctx, "dt/mixed", "1", m1), check.IsNil)
	c.Assert(s.reg.Client().PushImage(ctx, "dt/mixed", "2", m2), check.IsNil)
	s.n1, s.n2 = s.reg.Host+"/dt/app:1", s.reg.Host+"/dt/app:2"
	s.d = s.startDaemon(c)
	r := s.d.WharfIn(c, []byte(s.reg.Password+"\n"), "login", s.reg.Host, "-u", s.reg.Username, "--password-stdin")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
}

// diffJSON runs wharf diff --format json ARGS… and decodes its one object.
func (s *DiffSuite) diffJSON(c *check.C, args ...string) (types.ImageDiff, map[string]json.RawMessage) {
	r := s.d.Wharf(c, append([]string{"diff", "--format", "json"}, args...)...)
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s\n--- wharfd log tail ---\n%s", r, logTail(s.d)))
	c.Assert(strings.Count(strings.TrimSpace(r.Stdout), "\n"), check.Equals, 0, check.Commentf("not one object: %q", r.Stdout))
	var d types.ImageDiff
	c.Assert(json.Unmarshal([]byte(r.Stdout), &d), check.IsNil, check.Commentf("%s", r.Stdout))
	var keys map[string]json.RawMessage
	c.Assert(json.Unmarshal([]byte(r.Stdout), &keys), check.IsNil)
	return d, keys
}

// blobGets are the blob GETs the registry served since the last reset,
// by digest.
func (s *DiffSuite) blobGets() map[string]int {
	out := map[string]int{}
	for _, l := range s.reg.RequestLog() {
		if !strings.HasPrefix(l, "GET /v2/") || !strings.Contains(l, "/blobs/sha256:") {
			continue
		}
		d := l[strings.Index(l, "/blobs/")+len("/blobs/"):]
		if i := strings.IndexByte(d, '?'); i >= 0 {
			d = d[:i]
		}
		out[d]++
	}
	return out
}

func filePaths(f *types.FilesDiff) []string {
	var out []string
	for _, ch := range f.Changes {
		out = append(out, ch.Change+" "+ch.Path)
	}
	return out
}

// checkPackages asserts the packages section names exactly libfoo1's
// upgrade.
func checkPackages(c *check.C, d types.ImageDiff) {
	c.Assert(d.Errors, check.HasLen, 0)
	c.Assert(d.Packages, check.NotNil)
	c.Assert(d.Packages.Added, check.HasLen, 0)
	c.Assert(d.Packages.Removed, check.HasLen, 0)
	c.Assert(d.Packages.Downgraded, check.HasLen, 0)
	c.Assert(d.Packages.Upgraded, check.DeepEquals, []types.PackageChange{{Name: "libfoo1", Type: types.PackageTypeDeb, From: "1.0-1", To: "1.1-1"}})
}

// Two remote versions: the diff names exactly the package and the file
// (and the status file that records the package), and reads nothing of
// the layer they share.
func (s *DiffSuite) TestRemoteDiffNamesThePackageAndTheFileAndReadsNoSharedLayer(c *check.C) {
	n1, n2 := s.reg.Host+"/dt/remote:1", s.reg.Host+"/dt/remote:2"
	shared := s.r1.Layers[0].Digest
	s.reg.ResetCounters()
	d, _ := s.diffJSON(c, "--remote", n1, n2)
	c.Assert(d.From.Kind, check.Equals, types.SideRemote)
	c.Assert(d.To.Digest, check.Equals, s.r2.Manifest.Digest)
	c.Assert(d.Files, check.NotNil, check.Commentf("errors %v", d.Errors))
	c.Assert(filePaths(d.Files), check.DeepEquals, []string{"changed /etc/app.conf", "changed /var/lib/dpkg/status"})
	for _, ch := range d.Files.Changes {
		c.Assert(ch.What, check.DeepEquals, []string{"content"}, check.Commentf("%s", ch.Path))
		c.Assert(ch.From.Digest, check.Not(check.Equals), ch.To.Digest)
	}
	c.Assert(d.Files.LayersIndexed, check.Equals, 2)
	checkPackages(c, d)
	gets := s.blobGets()
	c.Assert(gets[shared], check.Equals, 0, check.Commentf("the shared layer was downloaded: %v", s.reg.RequestLog()))
	// Each top layer at most once.
	c.Assert(gets[s.r1.Layers[1].Digest] <= 1 && gets[s.r2.Layers[1].Digest] <= 1, check.Equals, true, check.Commentf("%v", gets))

	c.Assert(d.Layers.Shared, check.DeepEquals, []types.DiffLayer{{Digest: shared, Size: s.sizes[shared]}})
	c.Assert(d.Layers.Added, check.HasLen, 1)
	c.Assert(d.Layers.Removed, check.HasLen, 1)
	c.Assert(d.Source.CompareURL, check.Equals, "https://github.com/wharf-tests/app/compare/1111111...2222222")
	c.Assert(d.Config.Changes, check.DeepEquals, []types.Changed{{Field: "Labels[org.opencontainers.image.revision]", From: "1111111", To: "2222222"}})
	c.Assert(d.Signer, check.NotNil)
	c.Assert(d.Signer.Differs(), check.Equals, false)
}

// An ELF executable that is no Go binary, in both top layers: the index
// pass reads it for the package list and declines it, so the packages
// section does not read it again. Each top layer is read once, whole, and
// no range request follows.
func (s *DiffSuite) TestPackagesSectionReadsADeclinedExecutableNoMore(c *check.C) {
	top := func(pkg, conf string) []contentsEntry {
		return append(diffTopLayer(pkg, conf),
			contentsEntry{typ: tar.TypeDir, name: "usr/bin/", mode: 0o755},
			contentsEntry{typ: tar.TypeReg, name: "usr/bin/tool", mode: 0o755, body: "\x7fELF\x02\x01\x01" + strings.Repeat("not go ", 64)})
	}
	base := diffBaseLayer(37)
	e1 := diffImage(c, nil, base, top("1.0-1", "elf=one\n"))
	e2 := diffImage(c, nil, base, top("1.1-1", "elf=two\n"))
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, "dt/elf", "1", e1), check.IsNil)
	c.Assert(s.reg.Client().PushImage(ctx, "dt/elf", "2", e2), check.IsNil)
	s.reg.ResetCounters()
	d, _ := s.diffJSON(c, "--remote", "--sections", "packages,files", s.reg.Host+"/dt/elf:1", s.reg.Host+"/dt/elf:2")
	checkPackages(c, d)
	gets := s.blobGets()
	c.Assert(gets[e1.Layers[1].Digest] == 1 && gets[e2.Layers[1].Digest] == 1, check.Equals, true, check.Commentf("%v", gets))
	for i, r := range s.reg.Counter.HeaderValues("Range") {
		c.Assert(r, check.Equals, "", check.Commentf("a range request: %s", s.reg.Counter.Requests()[i]))
	}
}

// The package database in the shared base of one side and in the top
// layer of the other: the packages section reads what it needs of the
// base to stay exact, and still names the one package. The files
// section, built first and with the base's index not at hand, names the
// paths only the new top layer writes as added, From unread.
func (s *DiffSuite) TestPackagesWhenOneSideKeepsTheBasesDatabase(c *check.C) {
	d, _ := s.diffJSON(c, "--remote", "--sections", "packages,files", s.reg.Host+"/dt/mixed:1", s.reg.Host+"/dt/mixed:2")
	checkPackages(c, d)
	c.Assert(filePaths(d.Files), check.DeepEquals, []string{"changed /etc/app.conf", "added /usr/share/doc/README", "added /var/lib/dpkg/status"})
	c.Assert(d.Files.SharedCompared, check.Equals, false)
	c.Assert(d.Files.Changes[2].Unindexed, check.Equals, "from")
	// Now the base's index is held (the packages section built it): the
	// files section compares the whole views, and the status file is a
	// change.
	d, _ = s.diffJSON(c, "--remote", "--sections", "files", s.reg.Host+"/dt/mixed:1", s.reg.Host+"/dt/mixed:2")
	c.Assert(d.Files.SharedCompared, check.Equals, true)
	c.Assert(filePaths(d.Files), check.DeepEquals, []string{"changed /etc/app.conf", "added /usr", "added /usr/share", "added /usr/share/doc", "added /usr/share/doc/README", "changed /var/lib/dpkg/status"})
}

// With the old version pulled, the diff against the new remote one says
// what a pull would download, and a real pull then downloads exactly
// those bytes; the shared layer's index, built by the pull, lets the
// files section compare whole views, with the same answer.
func (s *DiffSuite) TestPullBytesEqualWhatThePullDownloads(c *check.C) {
	s.d.WharfOK(c, "pull", s.n1)
	_ = s.d.Wharf(c, "rmi", s.n2) // another test may have pulled it
	s.reg.ResetCounters()
	d, _ := s.diffJSON(c, "local:"+s.n1, "remote:"+s.n2)
	c.Assert(s.blobGets()[s.baseBlob], check.Equals, 0, check.Commentf("%v", s.reg.RequestLog()))
	c.Assert(d.From.Kind, check.Equals, types.SideLocal)
	c.Assert(filePaths(d.Files), check.DeepEquals, []string{"changed /etc/app.conf", "changed /var/lib/dpkg/status"})
	c.Assert(d.Files.SharedCompared, check.Equals, true)
	checkPackages(c, d)
	c.Assert(d.Pull.Present, check.Equals, 1)
	c.Assert(d.Pull.Layers, check.DeepEquals, []types.DiffLayer{{Digest: s.v2.Layers[1].Digest, Size: s.sizes[s.v2.Layers[1].Digest]}})
	c.Assert(d.Pull.Bytes, check.Equals, s.sizes[s.v2.Layers[1].Digest]+s.sizes[s.v2.Config.Digest])

	// A pull in a daemon that has just read the config keeps it in its
	// registry client's content cache: the pull measured is a cold one.
	s.d.Restart(c)
	s.reg.ResetCounters()
	s.d.WharfOK(c, "pull", s.n2)
	var pulled int64
	for dg, n := range s.blobGets() {
		size, ok := s.sizes[dg]
		c.Assert(ok, check.Equals, true, check.Commentf("a blob not pushed: %s", dg))
		pulled += int64(n) * size
	}
	c.Assert(pulled, check.Equals, d.Pull.Bytes, check.Commentf("requests %v", s.reg.RequestLog()))

	// Both local now: nothing to pull, the same differences, no registry.
	s.reg.ResetCounters()
	d, _ = s.diffJSON(c, s.n1, s.n2)
	c.Assert(d.Pull.Bytes, check.Equals, int64(0))
	c.Assert(d.Pull.Layers, check.HasLen, 0)
	c.Assert(filePaths(d.Files), check.DeepEquals, []string{"changed /etc/app.conf", "changed /var/lib/dpkg/status"})
	c.Assert(s.reg.RequestLog(), check.HasLen, 0)
}

// An image against itself is empty in every section, and --exit-code
// says 0; two versions say 1; a missing image says 2.
func (s *DiffSuite) TestSelfDiffIsEmptyAndExitCodes(c *check.C) {
	self := s.reg.Host + "/dt/self:1"
	d, _ := s.diffJSON(c, "--remote", self, self)
	c.Assert(d.Differs(), check.Equals, false, check.Commentf("%+v", d))
	c.Assert(d.Files.Changes, check.HasLen, 0)
	c.Assert(d.Files.LayersIndexed, check.Equals, 0)
	c.Assert(d.Config.Changes, check.HasLen, 0)
	c.Assert(d.Layers.Added, check.HasLen, 0)
	if d.Packages != nil {
		c.Assert(d.Packages.Empty(), check.Equals, true)
	}
	c.Assert(d.Source.CompareURL, check.Equals, "")

	sections := "config,layers,files,source,signer,pull"
	r := s.d.Wharf(c, "diff", "--exit-code", "--remote", "--sections", sections, self, self)
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	c.Assert(r.Stdout, check.Matches, `(?s).*FILES \(0 layers indexed\)\n  \(no differences\).*`)
	r = s.d.Wharf(c, "diff", "--exit-code", "--remote", "--sections", sections, s.n1, s.n2)
	c.Assert(r.ExitCode, check.Equals, 1, check.Commentf("%s", r))
	c.Assert(r.Stdout, check.Matches, `(?s).*~ /etc/app\.conf  content\n~ /var/lib/dpkg/status  content\n.*`)
	r = s.d.Wharf(c, "diff", "--exit-code", "--remote", s.n1, s.reg.Host+"/dt/nosuch:1")
	c.Assert(r.ExitCode, check.Equals, 2, check.Commentf("%s", r))
	c.Assert(r.Stderr, check.Matches, `(?is).*no such image.*`)
}

// --sections builds those alone: the JSON object has a key per section
// built and none for the others; the API answers the same, and refuses
// an unknown section.
func (s *DiffSuite) TestSectionsAndJSONShape(c *check.C) {
	s.reg.ResetCounters()
	d, keys := s.diffJSON(c, "--remote", "--sections", "config,source", s.n1, s.n2)
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	c.Assert(names, check.DeepEquals, []string{"Config", "From", "Source", "To"})
	c.Assert(d.Source.FromRevision, check.Equals, "1111111")
	// Neither layer was read: config and source need the configs alone.
	gets := s.blobGets()
	for _, img := range []*testregistry.Image{s.v1, s.v2} {
		for _, l := range img.Layers {
			c.Assert(gets[l.Digest], check.Equals, 0, check.Commentf("%v", s.reg.RequestLog()))
		}
	}

	path := "/v1.50/wharf/images/diff?from=" + s.n1 + "&to=" + s.n2 + "&remote=1&sections=layers,pull"
	r := s.d.Req(c, http.MethodGet, path, nil, "X-Registry-Auth", auth(s.reg))
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	var api map[string]json.RawMessage
	c.Assert(json.Unmarshal([]byte(r.Body), &api), check.IsNil, check.Commentf("%s", r.Body))
	_, hasLayers := api["Layers"]
	_, hasPull := api["Pull"]
	_, hasFiles := api["Files"]
	c.Assert(hasLayers && hasPull && !hasFiles, check.Equals, true, check.Commentf("%s", r.Body))

	r = s.d.Req(c, http.MethodGet, "/wharf/images/diff?from=a&to=b&sections=nope", nil)
	c.Assert(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s", r))
	bad := s.d.Wharf(c, "diff", "--sections", "nope", "a", "b")
	c.Assert(bad.ExitCode, check.Equals, 1, check.Commentf("%s", bad))
}

// A local side against a remote one of the same image: nothing differs,
// and reading the local side asks the registry nothing beyond the remote
// side's resolution.
func (s *DiffSuite) TestLocalAgainstRemoteOfTheSameImage(c *check.C) {
	s.d.WharfOK(c, "pull", s.n1)
	d, _ := s.diffJSON(c, "--sections", "config,layers,files,source", "local:"+s.n1, "remote:"+s.n1)
	c.Assert(d.Differs(), check.Equals, false, check.Commentf("%+v", d))
	c.Assert(d.From.Digest, check.Equals, d.To.Digest)
	c.Assert(d.From.Kind+" "+d.To.Kind, check.Equals, "local remote")
}

// An archive side: the old version as `wharf save` wrote it, read in
// place by the daemon, against the new one in its registry.
func (s *DiffSuite) TestArchiveSide(c *check.C) {
	s.d.WharfOK(c, "pull", s.n1)
	file := filepath.Join(c.MkDir(), "v1.tar")
	s.d.WharfOK(c, "save", "-o", file, s.n1)
	d, _ := s.diffJSON(c, "archive:"+file, "remote:"+s.n2)
	c.Assert(d.From.Kind, check.Equals, types.SideArchive)
	c.Assert(d.From.Digest, check.Equals, s.v1.Manifest.Digest)
	c.Assert(filePaths(d.Files), check.DeepEquals, []string{"changed /etc/app.conf", "changed /var/lib/dpkg/status"})
	checkPackages(c, d)
	c.Assert(d.Config.Changes, check.HasLen, 1)

	r := s.d.Wharf(c, "diff", "archive:relative.tar", s.n2)
	c.Assert(r.ExitCode, check.Equals, 1, check.Commentf("%s", r))
	c.Assert(r.Stderr, check.Matches, `(?s).*absolute.*`)
}
