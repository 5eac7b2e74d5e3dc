package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// OracleSuite is the correctness corpus: each case is an image written
// here layer by layer (whiteouts, opaque directories, type swaps,
// hardlinks, symlinks, long names and PAX, sparse and setuid files, an
// empty layer, Docker and OCI media types, go-containerregistry#2029),
// pushed to the real registry. Its filesystem as an oracle no one here
// wrote sees it — dockerd 20.10 (`docker create`, then `docker export`,
// on the vfs driver), checked against umoci's unpack of the same image —
// must equal what the real wharf CLI reports through the real wharfd:
// `ls -R --format json /` and `cp IMAGE:/ -`, remote and after a pull,
// path by path (type, mode, owner, size, link target, mtime) and file by
// file (bytes).
type OracleSuite struct {
	suiteFixture
	reg *testregistry.Registry
	d   *Daemon
	dd  *dockerd // nil when umoci is the oracle (no dockerd, outside CI)

	cases  []*oracleCase
	pulled bool
}

// oracleCase is one pushed case with the oracle's tree of it.
type oracleCase struct {
	corpusCase
	img    *testregistry.Image
	ref    string
	oracle *fsTree // dockerd's export, or umoci's unpack without dockerd
	umoci  *fsTree
}

func TestOracleSuite(t *testing.T) { t.Parallel(); runSuite(t, &OracleSuite{}) }

func (s *OracleSuite) SetUpSuite(c *check.C) {
	umoci := needOracleRoot(c)
	// Token auth, as registries serve images: wharf and the oracle log in.
	s.reg = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken})
	s.d = s.startDaemon(c)
	login := s.d.WharfIn(c, []byte(s.reg.Password+"\n"), "login", s.reg.Host, "-u", s.reg.Username, "--password-stdin")
	c.Assert(login.ExitCode, check.Equals, 0, check.Commentf("%s", login))
	if _, err := exec.LookPath("dockerd"); err == nil || os.Getenv("CI") == "true" {
		s.dd = startDockerd(c, s.reg.Host)
		s.closeAtEnd(s.dd.stop)
		s.dd.dockerIn(c, []byte(s.reg.Password+"\n"), "login", s.reg.Host, "-u", s.reg.Username, "--password-stdin")
	} else {
		fmt.Fprintln(os.Stderr, "integration-cli: OracleSuite: no dockerd on PATH (docker.io); umoci's unpack is the oracle (dockerd is required when CI=true)")
	}
	for _, tc := range corpusCases() {
		oc := &oracleCase{corpusCase: tc}
		oc.img, oc.ref = pushCase(c, s.reg, tc)
		oracleImg, oracleRef := oc.img, oc.ref
		if tc.zstdChunked {
			oracleImg, oracleRef = pushTwin(c, s.reg, tc)
		}
		oc.umoci = umociTree(c, umoci, oracleImg)
		oc.oracle = oc.umoci
		if s.dd != nil {
			oc.oracle = treeFromTar(c, s.dd.export(c, oracleRef), dockerAdded)
		}
		s.cases = append(s.cases, oc)
	}
}

// needOracleRoot finds umoci and checks that the oracles can keep owners
// and setuid bits (as root only); it skips loudly, or fails under CI=true.
func needOracleRoot(c *check.C) string {
	umoci := requireClient(c, "umoci", "umoci (apt)")
	if os.Geteuid() != 0 {
		why := "the oracles (dockerd, umoci unpack) keep owners and setuid bits as root only"
		if os.Getenv("CI") == "true" {
			c.Fatal(why)
		}
		c.Skip(why)
	}
	return umoci
}

// umociTree is umoci's unpack of img.
func umociTree(c *check.C, umoci string, img *testregistry.Image) *fsTree {
	dir := c.MkDir()
	writeOCILayout(c, filepath.Join(dir, "image"), img)
	out, err := exec.Command(umoci, "unpack", "--image", filepath.Join(dir, "image")+":t", filepath.Join(dir, "bundle")).CombinedOutput()
	c.Assert(err, check.IsNil, check.Commentf("umoci unpack: %s", out))
	return treeFromDir(c, filepath.Join(dir, "bundle", "rootfs"))
}

// report fails c with every case's differences, so one run shows all of
// them; it names the cases that agree too.
func report(c *check.C, what string, diffs map[string][]string, order []*oracleCase) {
	var b strings.Builder
	var ok []string
	for _, oc := range order {
		d, seen := diffs[oc.name]
		if !seen {
			continue
		}
		if len(d) == 0 {
			ok = append(ok, oc.name)
			continue
		}
		fmt.Fprintf(&b, "\n== %s (%s) ==\n  %s", oc.name, oc.ref, strings.Join(d, "\n  "))
	}
	if b.Len() > 0 {
		c.Fatalf("%s disagrees with the oracle (agreeing: %v):%s", what, ok, b.String())
	}
	c.Logf("%s agrees with the oracle on %v", what, ok)
}

// The two oracles agree with each other: the harness and the corpus are
// checked before anything of wharf's is compared with them.
func (s *OracleSuite) TestCorpusDockerdAgreesWithUmoci(c *check.C) {
	if s.dd == nil {
		c.Skip("no dockerd: umoci is the only oracle")
	}
	diffs := map[string][]string{}
	for _, oc := range s.cases {
		diffs[oc.name] = compareTrees(oc.oracle, oc.umoci, compareOpts{digests: true, mtimes: true})
	}
	report(c, "umoci unpack", diffs, s.cases)
}

// The corpus is what it says: spot checks that the cases hold what the
// issue names, so that an oracle and wharf agreeing on an empty image
// cannot pass.
func (s *OracleSuite) TestCorpusHoldsItsCases(c *check.C) {
	tree := func(name string) *fsTree {
		for _, oc := range s.cases {
			if oc.name == name {
				return oc.oracle
			}
		}
		c.Fatalf("no case %s", name)
		return nil
	}
	w := tree("whiteouts")
	c.Assert(w.nodes["/d"], check.IsNil, check.Commentf("the whited-out directory"))
	c.Assert(w.nodes["/a/gone"], check.IsNil)
	c.Assert(w.nodes["/a/keep"], check.NotNil)
	o := tree("opaque")
	c.Assert(o.nodes["/o/old1"], check.IsNil)
	c.Assert(o.nodes["/o/new"], check.NotNil)
	sw := tree("file-dir-swap")
	c.Assert(sw.nodes["/fd"].Type, check.Equals, "dir")
	c.Assert(sw.nodes["/df"].Type, check.Equals, "file")
	c.Assert(sw.nodes["/df/inner"], check.IsNil)
	h := tree("hardlinks")
	c.Assert(h.groups, check.DeepEquals, []string{"/h/a|/h/b|/h/c"})
	c.Assert(h.nodes["/h/u"].Digest, check.Equals, sha([]byte("target body")))
	sp := tree("sparse")
	c.Assert(sp.nodes["/sp/holes"].Size, check.Equals, int64(1<<20))
	su := tree("setuid")
	c.Assert(su.nodes["/bin/su"].Mode&os.ModeSetuid, check.Not(check.Equals), os.FileMode(0))
	c.Assert(su.nodes["/bin"].UID, check.Equals, int64(9))
	g := tree("ggcr-2029")
	c.Assert(g.nodes["/test/hello.txt"], check.IsNil, check.Commentf("go-containerregistry#2029: the removed file must stay removed"))
	c.Assert(g.nodes["/test/hello2.txt"], check.NotNil)
	x := tree("links-across-layers")
	c.Assert(x.groups, check.DeepEquals, []string{"/d/a|/d/b"}, check.Commentf("a hardlink to a lower layer's file"))
	c.Assert(x.nodes["/real/new"], check.NotNil, check.Commentf("written through the symlinked parent"))
	c.Assert(x.nodes["/ln/new"], check.IsNil)
	c.Assert(x.nodes["/todir"].Type, check.Equals, "symlink")
	c.Assert(x.nodes["/tolink"].Type, check.Equals, "dir")
	dv := tree("devices")
	c.Assert(dv.nodes["/devs/null"].Type, check.Equals, "char")
	c.Assert(dv.nodes["/devs/loop"].Type, check.Equals, "block")
	ln := tree("long-names-pax")
	c.Assert(ln.nodes[longPath("/pax")], check.NotNil)
	c.Assert(ln.nodes["/bigid"].UID, check.Equals, int64(3000000))
}

// listing runs `wharf ls -R --format json [--remote] IMAGE /`.
func (s *OracleSuite) listing(c *check.C, oc *oracleCase, remote bool) (*fsTree, error) {
	args := []string{"ls", "-R", "--format", "json"}
	if remote {
		args = append(args, "--remote")
	}
	r := s.d.Wharf(c, append(args, oc.ref, "/")...)
	if r.ExitCode != 0 {
		return nil, fmt.Errorf("exit %d: %s%s", r.ExitCode, firstLine(r.Stderr), lastDaemonError(s.d))
	}
	return treeFromListing(c, r.Stdout), nil
}

// copied runs `wharf cp [--remote] IMAGE:/ -` and reads the tar.
func (s *OracleSuite) copied(c *check.C, oc *oracleCase, remote bool) (*fsTree, error) {
	args := []string{"cp"}
	if remote {
		args = append(args, "--remote")
	}
	r := s.d.Wharf(c, append(args, oc.ref+":/", "-")...)
	if r.ExitCode != 0 {
		return nil, fmt.Errorf("exit %d: %s%s", r.ExitCode, firstLine(r.Stderr), lastDaemonError(s.d))
	}
	return treeFromTar(c, []byte(r.Stdout), nil), nil
}

// lastDaemonError is wharfd's last logged error, for a failure whose
// reason stayed in its log (a stream cut after it started).
func lastDaemonError(d *Daemon) string {
	lines := strings.Split(d.Log(), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "level=error") {
			return "\n  wharfd: " + lines[i]
		}
	}
	return ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// pullAll pulls every case into wharfd once, for the local comparisons.
func (s *OracleSuite) pullAll(c *check.C) {
	if s.pulled {
		return
	}
	for _, oc := range s.cases {
		name, tag, _ := strings.Cut(strings.TrimPrefix(oc.ref, s.reg.Host+"/"), ":")
		_, lines := s.d.Pull(c, s.reg.Host+"/"+name, tag, auth(s.reg))
		c.Assert(lines.Err(), check.Equals, "", check.Commentf("pull %s", oc.ref))
	}
	s.pulled = true
}

// compareAll compares every case's oracle tree (less the node types
// skip names) with what get reads.
func (s *OracleSuite) compareAll(c *check.C, what string, get func(*oracleCase) (*fsTree, error), o compareOpts, skip ...string) {
	diffs := map[string][]string{}
	for _, oc := range s.cases {
		got, err := get(oc)
		if err != nil {
			diffs[oc.name] = []string{err.Error()}
			continue
		}
		diffs[oc.name] = compareTrees(oc.oracle.without(skip...), got, o)
	}
	report(c, what, diffs, s.cases)
}

func (s *OracleSuite) TestRemoteListingMatchesOracle(c *check.C) {
	s.compareAll(c, "wharf ls -R --remote", func(oc *oracleCase) (*fsTree, error) { return s.listing(c, oc, true) }, compareOpts{mtimes: true})
}

func (s *OracleSuite) TestRemoteCopyMatchesOracle(c *check.C) {
	s.compareAll(c, "wharf cp --remote IMAGE:/ -", func(oc *oracleCase) (*fsTree, error) { return s.copied(c, oc, true) }, compareOpts{digests: true, mtimes: true})
}

func (s *OracleSuite) TestLocalListingMatchesOracle(c *check.C) {
	s.pullAll(c)
	s.compareAll(c, "wharf ls -R (pulled)", func(oc *oracleCase) (*fsTree, error) { return s.listing(c, oc, false) }, compareOpts{mtimes: true})
}

func (s *OracleSuite) TestLocalCopyMatchesOracle(c *check.C) {
	s.pullAll(c)
	s.compareAll(c, "wharf cp IMAGE:/ - (pulled)", func(oc *oracleCase) (*fsTree, error) { return s.copied(c, oc, false) }, compareOpts{digests: true, mtimes: true})
}

// The eStargz and zstd:chunked cases are listed from their TOCs (Source
// "estargz", "zstd:chunked") in at most 2 single-range requests a layer
// for eStargz (the tail, then the TOC if the tail missed it) and 1 for
// zstd:chunked (its annotation gives the range), and a file is read by
// its chunks: every layer request is a Range request, none a whole-layer
// download. Their bytes and listings equal the oracle's (the comparisons
// above).
func (s *OracleSuite) TestTOCCasesReadFromTheirTOCs(c *check.C) {
	for _, tc := range []struct {
		source   string
		perLayer int
		file     string
		body     string
	}{
		{"estargz", 2, "/app/big", strings.Repeat("0123456789abcdef", 400)},
		{"zstd:chunked", 1, "/z/big", strings.Repeat("zstd:chunked ", 2000)},
	} {
		var base *oracleCase
		for _, o := range s.cases {
			if (o.estargz && tc.source == "estargz") || (o.zstdChunked && tc.source == "zstd:chunked") {
				base = o
			}
		}
		c.Assert(base, check.NotNil)
		// A copy of the case with one more file in each layer: layers of
		// their own, which no other test has indexed or pulled, so the
		// counts are a cold read's.
		fresh := base.corpusCase
		fresh.name += "-cold"
		fresh.layers = nil
		for i, l := range base.layers {
			fresh.layers = append(fresh.layers, append(append([]ent{}, l...), file(fmt.Sprintf("cold-%d", i), fresh.name)))
		}
		oc := &oracleCase{corpusCase: fresh}
		oc.img, oc.ref = pushCase(c, s.reg, fresh)
		layers := map[string]bool{}
		for _, l := range oc.img.Layers {
			layers[l.Digest] = true
		}
		layerGets := func() (n int, whole []string) {
			reqs, ranges := s.reg.Counter.Requests(), s.reg.Counter.HeaderValues("Range")
			for i, q := range reqs {
				_, p, _ := strings.Cut(q, " ")
				if !strings.HasPrefix(q, "GET ") || !layers[p[strings.LastIndex(p, "/")+1:]] {
					continue
				}
				n++
				if ranges[i] == "" {
					whole = append(whole, q)
				}
			}
			return n, whole
		}
		s.reg.ResetCounters()
		r := s.d.WharfOK(c, "ls", "-R", "--format", "json", "--remote", oc.ref, "/")
		for _, e := range entries(c, r.Stdout) {
			c.Assert(e.Source, check.Equals, tc.source, check.Commentf("%+v", e))
		}
		cold, whole := layerGets()
		c.Assert(cold >= len(oc.img.Layers) && cold <= tc.perLayer*len(oc.img.Layers), check.Equals, true, check.Commentf("%s: %d layer requests for %d layers:\n%s", tc.source, cold, len(oc.img.Layers), strings.Join(s.reg.Counter.Requests(), "\n")))
		c.Assert(whole, check.HasLen, 0, check.Commentf("%s: whole-layer downloads", tc.source))
		s.reg.ResetCounters()
		got := s.d.WharfOK(c, "cat", "--remote", oc.ref, tc.file)
		c.Assert(got.Stdout, check.Equals, tc.body)
		n, whole := layerGets()
		c.Assert(whole, check.HasLen, 0, check.Commentf("%s: cat downloaded a whole layer", tc.source))
		c.Logf("%s: ls -R cold in %d layer requests for %d layers; cat of a %d-byte file in %d range requests", tc.source, cold, len(oc.img.Layers), len(tc.body), n)
	}
}

// Where the two oracles differ, wharf takes a side, and this test says
// which: a parent directory a layer leaves implied ("a/b/f" with no "a/"
// entry) is made 0755 by umoci (and containerd's applier) and 0600 by
// dockerd's layer unpack (pkg/archive's UnpackLayer); wharf's view makes
// it 0755, root-owned, as umoci does. The corpus itself names every
// directory, so that its comparisons have one answer.
func (s *OracleSuite) TestImpliedParentsFollowUmoci(c *check.C) {
	tc := corpusCase{name: "implied-parents", layers: [][]ent{{file("a/b/f", "deep")}}}
	img, ref := pushCase(c, s.reg, tc)
	umoci := umociTree(c, requireClient(c, "umoci", "umoci (apt)"), img)
	r := s.d.WharfOK(c, "ls", "-R", "--format", "json", "--remote", ref, "/")
	got := treeFromListing(c, r.Stdout)
	c.Assert(compareTrees(umoci, got, compareOpts{}), check.HasLen, 0)
	c.Assert(got.nodes["/a"].Mode, check.Equals, os.FileMode(0o755))
	if s.dd != nil {
		docker := treeFromTar(c, s.dd.export(c, ref), dockerAdded)
		c.Assert(docker.nodes["/a"].Mode, check.Equals, os.FileMode(0o600), check.Commentf("dockerd's implied parents changed: the corpus note is out of date"))
	}
}

// wharf cp IMAGE:/ DEST writes the oracle's filesystem into DEST, as
// docker cp would: the same paths, types, modes (setuid included), link
// targets, bytes, mtimes and hardlinks; not the owners (docker cp's rule),
// nor fifos and device nodes, which it skips.
func (s *OracleSuite) TestRemoteCopyToDiskMatchesOracle(c *check.C) {
	root := c.MkDir()
	s.compareAll(c, "wharf cp --remote IMAGE:/ DEST", func(oc *oracleCase) (*fsTree, error) {
		dest := filepath.Join(root, oc.name)
		r := s.d.Wharf(c, "cp", "--remote", oc.ref+":/", dest)
		if r.ExitCode != 0 {
			return nil, fmt.Errorf("exit %d: %s%s", r.ExitCode, firstLine(r.Stderr), lastDaemonError(s.d))
		}
		return treeFromDir(c, dest), nil
	}, compareOpts{digests: true, mtimes: true, noOwners: true}, "fifo", "char", "block")
}

// Every entry of the merged listing names the layer that last set its
// path: the topmost layer whose tar holds that name (paths a layer never
// names, such as those written through a symlinked parent, are left out).
func (s *OracleSuite) TestListingNamesTheLayerThatLastSetEachPath(c *check.C) {
	diffs := map[string][]string{}
	compared := 0
	for _, oc := range s.cases {
		want := map[string]string{}
		for i, l := range oc.layers {
			for _, e := range l {
				if e.raw != nil || strings.Contains(e.name, ".wh.") {
					continue
				}
				want[cleanName(e.name)] = oc.img.Layers[i].Digest
			}
		}
		r := s.d.Wharf(c, "ls", "-R", "--format", "json", "--remote", oc.ref, "/")
		if r.ExitCode != 0 {
			diffs[oc.name] = []string{firstLine(r.Stderr)}
			continue
		}
		var d []string
		for _, e := range entries(c, r.Stdout) {
			w, ok := want[e.Path]
			if !ok {
				continue
			}
			compared++
			if e.Layer != w {
				d = append(d, fmt.Sprintf("%s: Layer %s, want %s", e.Path, short(e.Layer), short(w)))
			}
		}
		diffs[oc.name] = d
	}
	c.Assert(compared > 80, check.Equals, true, check.Commentf("only %d entries compared", compared))
	report(c, "the Layer of each entry", diffs, s.cases)
}
