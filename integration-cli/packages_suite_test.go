package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/anchore/packageurl-go"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// PackagesSuite compares `wharf packages` with syft, package for package
// (name, version, type, purl), on images built here from package
// databases made on this machine: dpkg's own status (this machine's,
// split between status and distroless-style status.d files), rpm's sqlite
// database written by `rpm --dbpath D --justdb -i` of rpms rpmbuild makes
// here, an apk installed database written here (apk-tools is not packaged
// for Debian 12), the ndb and bdb databases go-rpmdb ships as test data
// (this machine's rpm writes neither), and a Go binary (bin/wharf, with
// build info). Each image is read remote (--remote) and again after a
// pull; syft scans the same image in the registry. The layers are
// eStargz, as a publisher that wants lazy reads pushes them; each image
// carries a layer of 8 MiB of incompressible filler that neither tool
// needs, so that the bytes each reads say what reading only the
// databases saves. wharf and syft reach the registry through proxies of
// their own that count the blob bytes served.
type PackagesSuite struct {
	suiteFixture
	reg               *testregistry.Registry
	d                 *Daemon
	syft              string
	wharfP, syftP     *blobCounter
	wharfAll, syftAll int64
}

func TestPackagesSuite(t *testing.T) { t.Parallel(); runSuite(t, &PackagesSuite{}) }

// blobCounter is a reverse proxy to the registry that counts the body
// bytes of the blob GETs it answers.
type blobCounter struct {
	srv   *httptest.Server
	host  string
	bytes atomic.Int64
}

func newBlobCounter(c *check.C, target string) *blobCounter {
	u, err := url.Parse(target)
	c.Assert(err, check.IsNil)
	b := &blobCounter{}
	rp := httputil.NewSingleHostReverseProxy(u)
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			w = &countingWriter{ResponseWriter: w, n: &b.bytes}
		}
		rp.ServeHTTP(w, r)
	}))
	b.host = strings.TrimPrefix(b.srv.URL, "http://")
	return b
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}

func (s *PackagesSuite) SetUpSuite(c *check.C) {
	s.syft = syftPath(c)
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.wharfP, s.syftP = newBlobCounter(c, s.reg.DirectURL), newBlobCounter(c, s.reg.DirectURL)
	s.closeAtEnd(s.wharfP.srv.Close)
	s.closeAtEnd(s.syftP.srv.Close)
	s.d = s.startDaemon(c)
}

func (s *PackagesSuite) TearDownSuite(c *check.C) {
	if s.syftAll > 0 {
		c.Logf("packages: all images, remote: wharf read %d blob bytes, syft %d: %.3fx", s.wharfAll, s.syftAll, float64(s.wharfAll)/float64(s.syftAll))
	}
	s.suiteFixture.TearDownSuite(c)
}

// syftPath is .cache/bin/syft (make syft), or syft on PATH.
func syftPath(c *check.C) string {
	root, err := testregistry.RepoRoot()
	c.Assert(err, check.IsNil)
	if p := filepath.Join(root, ".cache", "bin", "syft"); isExecutableFile(p) {
		return p
	}
	return requireClient(c, "syft", "syft (make syft, into .cache/bin)")
}

// fillerLayer is 8 MiB of incompressible bytes that no cataloger reads.
func fillerLayer(c *check.C) []byte {
	r := rand.New(rand.NewSource(34))
	b := make([]byte, 8<<20)
	_, _ = r.Read(b)
	return layerTar(c, dirE("opt/"), dirE("opt/filler/"), file("opt/filler/blob", string(b)))
}

// pushPackagesImage pushes an image of the filler and the layers given
// (uncompressed tars), all eStargz, as pk/NAME:1.
func (s *PackagesSuite) pushPackagesImage(c *check.C, name string, raws ...[]byte) string {
	var blobs [][]byte
	var anns []map[string]string
	for _, raw := range append([][]byte{fillerLayer(c)}, raws...) {
		// 64 KiB chunks: a package database or binary is read whole and
		// checked chunk by chunk; smaller chunks only cost deflate set-up.
		b, toc := estargzLayerChunked(c, raw, 64<<10)
		blobs = append(blobs, b)
		anns = append(anns, tocAnnotation(toc))
	}
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, "pk/"+name, "1", imageOfBlobs(c, blobs, anns)), check.IsNil)
	return "pk/" + name + ":1"
}

// pkgKey is what is compared of a package.
func pkgKey(typ, name, version, purl string) string {
	return typ + " " + name + " " + version + " " + purl
}

type syftDoc struct {
	Artifacts []struct {
		Name, Version, Type, PURL string
	} `json:"artifacts"`
}

func (d syftDoc) keys() []string {
	var out []string
	for _, a := range d.Artifacts {
		out = append(out, pkgKey(a.Type, a.Name, a.Version, a.PURL))
	}
	return uniqSorted(out)
}

func uniqSorted(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func wharfKeys(p *types.ImagePackages) []string {
	var out []string
	for _, a := range p.Packages {
		out = append(out, pkgKey(a.Type, a.Name, a.Version, a.PURL))
	}
	return uniqSorted(out)
}

// runSyft runs syft with a private home, no update check, and plain HTTP
// to the loopback registry.
func (s *PackagesSuite) runSyft(c *check.C, args ...string) []byte {
	home := c.MkDir()
	cmd := exec.Command(s.syft, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home, "TMPDIR="+home,
		"SYFT_CHECK_FOR_APP_UPDATE=false", "SYFT_REGISTRY_INSECURE_USE_HTTP=true")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	c.Assert(cmd.Run(), check.IsNil, check.Commentf("syft %v: %s", args, errb.String()))
	return out.Bytes()
}

func (s *PackagesSuite) syftScan(c *check.C, ref string) []string {
	var doc syftDoc
	out := s.runSyft(c, "registry:"+s.syftP.host+"/"+ref, "-q", "-o", "json")
	c.Assert(json.Unmarshal(out, &doc), check.IsNil)
	return doc.keys()
}

func (s *PackagesSuite) wharfPackages(c *check.C, args ...string) *types.ImagePackages {
	r := s.d.WharfOK(c, append([]string{"packages", "--format", "json"}, args...)...)
	var p types.ImagePackages
	c.Assert(json.Unmarshal([]byte(r.Stdout), &p), check.IsNil, check.Commentf("%s", r))
	return &p
}

// compareWithSyft checks ref remote, syft's scan, then ref pulled, then
// wharf's CycloneDX and SPDX read back by syft, and returns wharf's
// remote answer; want is the number of packages expected
// (-1: as many as syft finds).
func (s *PackagesSuite) compareWithSyft(c *check.C, ref string, want int) *types.ImagePackages {
	name := s.wharfP.host + "/" + ref
	w0 := s.wharfP.bytes.Load()
	remote := s.wharfPackages(c, "--remote", name)
	wharfBytes := s.wharfP.bytes.Load() - w0
	s0 := s.syftP.bytes.Load()
	oracle := s.syftScan(c, ref)
	syftBytes := s.syftP.bytes.Load() - s0
	s.wharfAll += wharfBytes
	s.syftAll += syftBytes
	c.Logf("packages %s: %d packages; remote: wharf read %d blob bytes (BytesRead %d), syft %d: %.3fx",
		ref, len(remote.Packages), wharfBytes, remote.BytesRead, syftBytes, float64(wharfBytes)/float64(max(syftBytes, 1)))

	got := wharfKeys(remote)
	if want >= 0 {
		c.Assert(len(got), check.Equals, want, check.Commentf("%s", strings.Join(got, "\n")))
	}
	c.Assert(len(got) > 0, check.Equals, true)
	c.Assert(got, check.DeepEquals, oracle, check.Commentf("wharf (remote) vs syft on %s:\n%s", ref, keysDiff(got, oracle)))
	c.Assert(remote.Source, check.Equals, types.PackagesFromDatabases)
	// The config blob is read to resolve the image, outside the room.
	c.Assert(remote.BytesRead > 0 && remote.BytesRead <= wharfBytes, check.Equals, true, check.Commentf("BytesRead %d, served %d", remote.BytesRead, wharfBytes))

	s.d.WharfOK(c, "pull", name)
	local := s.wharfPackages(c, name)
	c.Assert(wharfKeys(local), check.DeepEquals, oracle, check.Commentf("wharf (local) vs syft on %s:\n%s", ref, keysDiff(wharfKeys(local), oracle)))
	c.Assert(local.BytesRead, check.Equals, int64(0))
	s.readBackSBOMs(c, name, got)
	return remote
}

// keysDiff says what only one side has.
func keysDiff(a, b []string) string {
	in := func(s []string) map[string]bool {
		m := map[string]bool{}
		for _, v := range s {
			m[v] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var out []string
	for _, v := range a {
		if !mb[v] {
			out = append(out, "wharf only: "+v)
		}
	}
	for _, v := range b {
		if !ma[v] {
			out = append(out, "syft only:  "+v)
		}
	}
	return strings.Join(out, "\n")
}

// dpkgParagraphs are this machine's dpkg status, a paragraph each.
func dpkgParagraphs(c *check.C) []string {
	b, err := os.ReadFile("/var/lib/dpkg/status")
	if err != nil {
		c.Skip("no /var/lib/dpkg/status on this machine: " + err.Error())
	}
	var out []string
	for _, p := range strings.Split(string(b), "\n\n") {
		if strings.TrimSpace(p) != "" {
			out = append(out, strings.TrimSpace(p)+"\n")
		}
	}
	return out
}

func installedCount(paras []string) int {
	n := 0
	for _, p := range paras {
		if strings.HasPrefix(p, "Package: ") && !strings.Contains(p, "deinstall") {
			n++
		}
	}
	return n
}

func (s *PackagesSuite) TestDpkgStatusAndStatusDEqualSyft(c *check.C) {
	paras := dpkgParagraphs(c)
	osRelease, err := os.ReadFile("/etc/os-release")
	c.Assert(err, check.IsNil)
	const inStatusD = 20 // distroless writes one file a package
	ents := []ent{dirE("etc/"), file("etc/os-release", string(osRelease)), dirE("var/"), dirE("var/lib/"), dirE("var/lib/dpkg/"),
		file("var/lib/dpkg/status", strings.Join(paras[inStatusD:], "\n")), dirE("var/lib/dpkg/status.d/")}
	for i, p := range paras[:inStatusD] {
		name := fmt.Sprintf("pkg%02d", i)
		if f := strings.Fields(strings.SplitN(p, "\n", 2)[0]); len(f) == 2 {
			name = f[1]
		}
		ents = append(ents, file("var/lib/dpkg/status.d/"+name, p), file("var/lib/dpkg/status.d/"+name+".md5sums", "d41d8cd98f00b204e9800998ecf8427e  usr/share/doc/"+name+"/copyright\n"))
	}
	ref := s.pushPackagesImage(c, "deb", layerTar(c, ents...))
	remote := s.compareWithSyft(c, ref, installedCount(paras))
	c.Assert(remote.Distro, check.NotNil)
	c.Assert(remote.Distro.ID, check.Equals, "debian")
}

// tinyRPMs builds noarch rpms with no files: one plain, one with an
// epoch, one whose release names a distro.
func tinyRPMs(c *check.C) []string {
	rpmbuild := requireClient(c, "rpmbuild", "rpm")
	top := c.MkDir()
	c.Assert(os.MkdirAll(filepath.Join(top, "SPECS"), 0o755), check.IsNil)
	for _, p := range []struct{ name, version, release, epoch string }{
		{"wharf-tiny-a", "1.0", "1", ""},
		{"wharf-tiny-b", "0.9.1", "3.fc40", "2"},
		{"wharf-tiny-c", "2024.1", "0.rc1", "0"},
	} {
		spec := fmt.Sprintf("Name: %s\nVersion: %s\nRelease: %s\n", p.name, p.version, p.release)
		if p.epoch != "" {
			spec += "Epoch: " + p.epoch + "\n"
		}
		spec += "Summary: tiny\nLicense: MIT\nBuildArch: noarch\n%description\ntiny\n%files\n"
		f := filepath.Join(top, "SPECS", p.name+".spec")
		c.Assert(os.WriteFile(f, []byte(spec), 0o644), check.IsNil)
		r := runCmd(c, nil, nil, rpmbuild, "-bb", "--quiet", "--define", "_topdir "+top, f)
		c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	}
	rpms, err := filepath.Glob(filepath.Join(top, "RPMS", "noarch", "*.rpm"))
	c.Assert(err, check.IsNil)
	c.Assert(rpms, check.HasLen, 3)
	return rpms
}

const fedoraRelease = "NAME=\"Fedora Linux\"\nVERSION=\"40 (Container Image)\"\nID=fedora\nVERSION_ID=40\nPRETTY_NAME=\"Fedora Linux 40 (Container Image)\"\n"

func (s *PackagesSuite) TestRPMSqliteEqualsSyft(c *check.C) {
	rpms := tinyRPMs(c)
	rpm := requireClient(c, "rpm", "rpm")
	db := c.MkDir()
	r := runCmd(c, nil, nil, rpm, append([]string{"--dbpath", db, "--justdb", "-i", "--nodeps", "--ignorearch", "--ignoreos"}, rpms...)...)
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	sqlite, err := os.ReadFile(filepath.Join(db, "rpmdb.sqlite"))
	c.Assert(err, check.IsNil)
	ref := s.pushPackagesImage(c, "rpm-sqlite", layerTar(c, dirE("etc/"), file("etc/os-release", fedoraRelease),
		dirE("var/"), dirE("var/lib/"), dirE("var/lib/rpm/"), file("var/lib/rpm/rpmdb.sqlite", string(sqlite))))
	remote := s.compareWithSyft(c, ref, 3)
	versions := map[string]string{}
	for _, p := range remote.Packages {
		versions[p.Name] = p.Version + " " + p.PURL
	}
	c.Assert(versions["wharf-tiny-b"], check.Equals, "2:0.9.1-3.fc40 pkg:rpm/fedora/wharf-tiny-b@0.9.1-3.fc40?arch=noarch&distro=fedora-40&epoch=2&upstream=wharf-tiny-b-0.9.1-3.fc40.src.rpm")
}

// rpmdbTestdata is a database go-rpmdb ships as test data (ndb and bdb,
// which this machine's rpm does not write).
func rpmdbTestdata(c *check.C, rel string) []byte {
	root, err := testregistry.RepoRoot()
	c.Assert(err, check.IsNil)
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/anchore/go-rpmdb")
	cmd.Dir = root
	out, err := cmd.Output()
	c.Assert(err, check.IsNil)
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "pkg", "testdata", rel))
	c.Assert(err, check.IsNil)
	return b
}

func (s *PackagesSuite) TestRPMNdbAndBdbEqualSyft(c *check.C) {
	ndb := rpmdbTestdata(c, "sle15-bci/Packages.db")
	ref := s.pushPackagesImage(c, "rpm-ndb", layerTar(c, dirE("etc/"),
		file("etc/os-release", "NAME=\"SLES\"\nVERSION_ID=\"15.3\"\nID=\"sles\"\nID_LIKE=\"suse\"\n"),
		dirE("usr/"), dirE("usr/lib/"), dirE("usr/lib/sysimage/"), dirE("usr/lib/sysimage/rpm/"), file("usr/lib/sysimage/rpm/Packages.db", string(ndb))))
	s.compareWithSyft(c, ref, -1)

	bdb := rpmdbTestdata(c, "centos7-plain/Packages")
	ref = s.pushPackagesImage(c, "rpm-bdb", layerTar(c, dirE("etc/"),
		file("etc/os-release", "NAME=\"CentOS Linux\"\nVERSION=\"7 (Core)\"\nID=\"centos\"\nID_LIKE=\"rhel fedora\"\nVERSION_ID=\"7\"\n"),
		dirE("var/"), dirE("var/lib/"), dirE("var/lib/rpm/"), file("var/lib/rpm/Packages", string(bdb))))
	s.compareWithSyft(c, ref, -1)
}

// apkInstalled is an apk installed database in apk-tools' format (one
// record a package: P name, V version, A arch, o origin, L license, and
// the file lines apk writes), written here: apk-tools is not packaged
// for this machine's Debian.
const apkInstalled = `C:Q1hX1zT7fh/0kBW0qnpY1xK0T6XGU=
P:musl
V:1.2.5-r0
A:x86_64
S:411396
I:641024
T:the musl c library (libc) implementation
U:https://musl.libc.org/
L:MIT
o:musl
m:Natanael Copa <ncopa@alpinelinux.org>
t:1712137024
c:a7e3ac2f2a6ee8ef10ba4fc2e4d4a3a0c4a4b7f7
F:lib
R:ld-musl-x86_64.so.1
a:0:0:755
Z:Q1rZ0AS6jtyQ4M/Cz3JZ9OjOqbCvw=

C:Q1RO5Sdc1ziTxPQpS7QtDP1PWPtIg=
P:libcrypto3
V:3.3.2-r0
A:x86_64
L:Apache-2.0
o:openssl
D:so:libc.musl-x86_64.so.1

C:Q1mmVY8qRNNJvnZRVX8jQhh7tBIg4=
P:ca-certificates-bundle
V:20240705-r0
A:x86_64
L:MPL-2.0 AND MIT
o:ca-certificates
`

func (s *PackagesSuite) TestApkInstalledEqualsSyft(c *check.C) {
	ref := s.pushPackagesImage(c, "apk", layerTar(c, dirE("etc/"),
		file("etc/os-release", "NAME=\"Alpine Linux\"\nID=alpine\nVERSION_ID=3.20.3\nPRETTY_NAME=\"Alpine Linux v3.20\"\n"),
		dirE("lib/"), dirE("lib/apk/"), dirE("lib/apk/db/"), file("lib/apk/db/installed", apkInstalled)))
	s.compareWithSyft(c, ref, 3)
}

func (s *PackagesSuite) TestGoBinaryEqualsSyft(c *check.C) {
	bin, err := os.ReadFile(bins.Wharf)
	c.Assert(err, check.IsNil)
	ref := s.pushPackagesImage(c, "go", layerTar(c, dirE("usr/"), dirE("usr/local/"), dirE("usr/local/bin/"),
		modeE(file("usr/local/bin/wharf", string(bin)), 0o755, 0, 0),
		modeE(file("usr/local/bin/hello.sh", "#!/bin/sh\necho hello\n"), 0o755, 0, 0)))
	remote := s.compareWithSyft(c, ref, -1)
	var stdlib, main bool
	for _, p := range remote.Packages {
		stdlib = stdlib || p.Name == "stdlib"
		main = main || p.Name == "github.com/wharfproject/wharf"
	}
	c.Assert(stdlib && main, check.Equals, true, check.Commentf("%+v", remote.Packages))
}

// parsedPURLs are keys with each purl as packageurl-go parses it back:
// syft's SPDX reader parses the purls (lowercasing a Go module's
// namespace), its CycloneDX reader keeps them as written.
func parsedPURLs(keys []string) []string {
	var out []string
	for _, k := range keys {
		f := strings.SplitN(k, " ", 4)
		if len(f) == 4 {
			if p, err := packageurl.FromString(f[3]); err == nil {
				f[3] = p.ToString()
			}
		}
		out = append(out, strings.Join(f, " "))
	}
	return uniqSorted(out)
}

// readBackSBOMs writes wharf's CycloneDX and SPDX of name, reads each
// back with `syft convert`, and compares the packages with want. grype
// would read them too, but it needs a vulnerability database, and none
// can be downloaded here.
func (s *PackagesSuite) readBackSBOMs(c *check.C, name string, want []string) {
	want = parsedPURLs(want)
	dir := c.MkDir()
	for _, format := range []string{"cyclonedx-json", "spdx-json"} {
		r := s.d.WharfOK(c, "packages", "--remote", "--format", format, name)
		f := filepath.Join(dir, format+".json")
		c.Assert(os.WriteFile(f, []byte(r.Stdout), 0o644), check.IsNil)
		var doc syftDoc
		c.Assert(json.Unmarshal(s.runSyft(c, "convert", f, "-q", "-o", "syft-json"), &doc), check.IsNil)
		got := parsedPURLs(doc.keys())
		c.Assert(got, check.DeepEquals, want, check.Commentf("%s read back by syft convert:\n%s", format, keysDiff(got, want)))
	}
}

// sbomStatement is an SPDX statement as BuildKit attaches one: the image
// as its root package (no purl, not a package), two packages.
const sbomStatement = `{"_type":"https://in-toto.io/Statement/v0.6","predicateType":"https://spdx.dev/Document","subject":[],
"predicate":{"spdxVersion":"SPDX-2.3","SPDXID":"SPDXRef-DOCUMENT","packages":[
 {"name":"app","SPDXID":"SPDXRef-DocumentRoot-Image-app","primaryPackagePurpose":"CONTAINER"},
 {"name":"bash","SPDXID":"SPDXRef-Package-deb-bash","versionInfo":"5.2.15-2+b2","externalRefs":[{"referenceCategory":"PACKAGE-MANAGER","referenceType":"purl","referenceLocator":"pkg:deb/debian/bash@5.2.15-2%2Bb2?arch=amd64&distro=debian-12"}]},
 {"name":"golang.org/x/sys","SPDXID":"SPDXRef-Package-go-module-x-sys","versionInfo":"v0.20.0","externalRefs":[{"referenceCategory":"PACKAGE-MANAGER","referenceType":"purl","referenceLocator":"pkg:golang/golang.org/x/sys@v0.20.0"}]}
]}}`

func (s *PackagesSuite) TestAttachedSBOMAnswersFirst(c *check.C) {
	ctx, cancel := fixtureCtx()
	defer cancel()
	with, err := testregistry.NewIndex(testregistry.IndexOptions{Attestation: true, AttestationStatement: []byte(sbomStatement)})
	c.Assert(err, check.IsNil)
	c.Assert(s.reg.Client().PushIndex(ctx, "pk/sbom", "1", with), check.IsNil)
	without, err := testregistry.NewIndex(testregistry.IndexOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(s.reg.Client().PushIndex(ctx, "pk/nosbom", "1", without), check.IsNil)

	got := s.wharfPackages(c, "--remote", "--platform", "linux/amd64", s.wharfP.host+"/pk/sbom:1")
	c.Assert(got.Source, check.Equals, types.PackagesFromAttestation)
	c.Assert(got.Verified, check.Equals, false) // no signature policy here
	c.Assert(got.Digest, check.Equals, with.Images[0].Manifest.Digest)
	c.Assert(wharfKeys(got), check.DeepEquals, []string{
		"deb bash 5.2.15-2+b2 pkg:deb/debian/bash@5.2.15-2%2Bb2?arch=amd64&distro=debian-12",
		"go-module golang.org/x/sys v0.20.0 pkg:golang/golang.org/x/sys@v0.20.0",
	})

	got = s.wharfPackages(c, "--remote", "--platform", "linux/amd64", s.wharfP.host+"/pk/nosbom:1")
	c.Assert(got.Source, check.Equals, types.PackagesFromDatabases)
}

// Under a signature policy the attached SBOM answers only when the policy
// accepts the image: said Verified, with the key, when a cosign signature
// of the index verified; not used at all when the policy rejects it.
func (s *PackagesSuite) TestAttachedSBOMUnderThePolicy(c *check.C) {
	root, err := testregistry.RepoRoot()
	c.Assert(err, check.IsNil)
	cosign := filepath.Join(root, ".cache", "bin", "cosign")
	if !isExecutableFile(cosign) {
		if os.Getenv("CI") == "true" {
			c.Fatalf("cosign is missing: make test builds it (make cosign)")
		}
		c.Skip("cosign not built: run make cosign")
	}
	keys := c.MkDir()
	runCosign := func(args ...string) {
		cmd := exec.Command(cosign, args...)
		cmd.Env = append(os.Environ(), "HOME="+keys, "DOCKER_CONFIG="+keys, "COSIGN_PASSWORD=", "COSIGN_YES=true")
		cmd.Dir = keys
		out, err := cmd.CombinedOutput()
		c.Assert(err, check.IsNil, check.Commentf("cosign %s:\n%s", strings.Join(args, " "), out))
	}
	runCosign("generate-key-pair", "--output-key-prefix", filepath.Join(keys, "signer"))
	host := s.wharfP.host
	policy := filepath.Join(c.MkDir(), "policy.json")
	c.Assert(os.WriteFile(policy, []byte(fmt.Sprintf(`{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker":{
	  %q:[{"type":"sigstoreSigned","keyPath":%q,"signedIdentity":{"type":"matchRepository"}}],
	  %q:[{"type":"reject"}]}}}`, host+"/pk/sbom-signed", filepath.Join(keys, "signer.pub"), host+"/pk/sbom-refused")), 0o600), check.IsNil)
	d := s.startDaemon(c, "--signature-policy", policy)

	ctx, cancel := fixtureCtx()
	defer cancel()
	ix, err := testregistry.NewIndex(testregistry.IndexOptions{Attestation: true, AttestationStatement: []byte(sbomStatement)})
	c.Assert(err, check.IsNil)
	for _, repo := range []string{"pk/sbom-signed", "pk/sbom-refused", "pk/sbom-open"} {
		c.Assert(s.reg.Client().PushIndex(ctx, repo, "1", ix), check.IsNil)
	}
	runCosign("sign", "--key", filepath.Join(keys, "signer.key"), "--tlog-upload=false", "--use-signing-config=false",
		"--allow-insecure-registry", "--allow-http-registry", "--new-bundle-format=false", host+"/pk/sbom-signed@"+ix.Digest())

	packagesOf := func(repo string) *types.ImagePackages {
		r := d.WharfOK(c, "packages", "--format", "json", "--remote", "--platform", "linux/amd64", host+"/"+repo+":1")
		var p types.ImagePackages
		c.Assert(json.Unmarshal([]byte(r.Stdout), &p), check.IsNil, check.Commentf("%s", r))
		return &p
	}
	signed := packagesOf("pk/sbom-signed")
	c.Assert(signed.Source, check.Equals, types.PackagesFromAttestation, check.Commentf("%s", d.Log()))
	c.Assert(signed.Verified, check.Equals, true)
	c.Assert(signed.SignedBy, check.Not(check.Equals), "")
	c.Assert(signed.Packages, check.HasLen, 2)

	open := packagesOf("pk/sbom-open")
	c.Assert(open.Source, check.Equals, types.PackagesFromAttestation)
	c.Assert(open.Verified, check.Equals, false)

	refused := packagesOf("pk/sbom-refused")
	c.Assert(refused.Source, check.Equals, types.PackagesFromDatabases)
}
