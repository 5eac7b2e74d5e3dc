package integration

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/containerd/stargz-snapshotter/estargz"
	"gopkg.in/check.v1"

	"github.com/opencontainers/go-digest"
	"github.com/wharfproject/wharf/api/types"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// HostileFilesSuite is the hostile corpus of ls, cat and cp: images whose
// layers climb out of the root, point symlinks out of it or at
// themselves, carry eStargz TOCs that lie (offsets, size, digest), expand
// a thousandfold, or hold 10⁶ entries. Each is pushed to the real
// registry and read through the real wharf CLI and wharfd. Each must get
// a clear error (a non-zero exit and a message that names the problem),
// cost wharfd bounded memory (its peak RSS, VmHWM, measured from a reset
// before the case) and leave no file outside DEST.
type HostileFilesSuite struct {
	suiteFixture
	reg *testregistry.Registry
	d   *Daemon
}

func TestHostileFilesSuite(t *testing.T) { t.Parallel(); runSuite(t, &HostileFilesSuite{}) }

func (s *HostileFilesSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.d = s.startDaemon(c)
}

// push puts img into the registry as hostile-files/<name>:1.
func (s *HostileFilesSuite) push(c *check.C, name string, img *testregistry.Image) string {
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, "hostile-files/"+name, "1", img), check.IsNil)
	return s.reg.Host + "/hostile-files/" + name + ":1"
}

// pushLayers pushes an OCI image of uncompressed layers.
func (s *HostileFilesSuite) pushLayers(c *check.C, name string, layers ...[]ent) string {
	var raws [][]byte
	for _, l := range layers {
		raws = append(raws, layerTar(c, l...))
	}
	return s.push(c, name, corpusImage(c, false, raws))
}

// Memory bounds, in KiB of peak RSS above wharfd's RSS at the case's start.
const (
	// smallCaseKiB: a hostile image of a few KiB costs buffers only (a
	// 512 KiB TOC tail, gzip windows of 32 KiB, a 16 MiB TOC chunk at
	// most, HTTP buffers); 64 MiB is far under what holding a lying
	// size would cost.
	smallCaseKiB = 64 << 10
	// overCapTOCKiB: a TOC of 150 MiB + 1 byte must be refused before it
	// is held: wharfd may read what it streams (the tail request, 512
	// KiB) but never the TOC; 64 MiB is under half the TOC.
	overCapTOCKiB = 64 << 10
	// bombKiB: a layer that expands to over 9 GiB is read as a stream:
	// checkpoints of zeros compress to a few bytes, so 96 MiB holds the
	// stream's buffers and the index, and is 1 % of the output.
	bombKiB = 96 << 10
	// manyEntriesKiB: 10⁶ entries are refused at layerindex's
	// MaxEntries (500,000) or MaxIndexBytes (128 MiB); the index up to the
	// cap is about 100 MiB live (192 bytes and a short path an entry),
	// and Go's GC lets the heap reach twice the live data (GOGC=100):
	// 320 MiB with the runtime's own.
	manyEntriesKiB = 320 << 10
)

// peak runs fn and returns wharfd's peak RSS growth over it, in KiB:
// VmHWM is reset to the current RSS first (clear_refs 5, root only;
// otherwise the growth is measured from the peak so far, which can only
// make it smaller, so the bound is checked against the absolute peak).
func (s *HostileFilesSuite) peak(c *check.C, fn func()) (grewKiB, peakKiB int64) {
	pid := s.d.pid()
	reset := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
	base := procStatus(c, pid, "VmRSS")
	fn()
	hwm := procStatus(c, pid, "VmHWM")
	if !reset {
		return hwm, hwm
	}
	return hwm - base, hwm
}

// bounded runs fn and fails the case when wharfd's peak RSS grew more
// than boundKiB.
func (s *HostileFilesSuite) bounded(c *check.C, what string, boundKiB int64, fn func()) {
	grew, hwm := s.peak(c, fn)
	c.Logf("%s: wharfd peak RSS +%d KiB (VmHWM %d KiB, bound +%d KiB)", what, grew, hwm, boundKiB)
	c.Assert(grew <= boundKiB, check.Equals, true, check.Commentf("%s: wharfd's peak RSS grew %d KiB, over the %d KiB bound", what, grew, boundKiB))
	s.d.ping(c)
}

// refused requires a non-zero exit whose stderr matches want.
func refused(c *check.C, r Result, want string) {
	c.Logf("refused: %s → exit %d: %s", r.Cmd, r.ExitCode, firstLine(r.Stderr))
	c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Assert(regexp.MustCompile(want).MatchString(r.Stderr), check.Equals, true, check.Commentf("stderr does not name the problem (want /%s/)\n%s", want, r))
}

// entries parses `wharf ls --format json` output.
func entries(c *check.C, out string) []types.FileEntry {
	var es []types.FileEntry
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var e types.FileEntry
		c.Assert(json.Unmarshal([]byte(line), &e), check.IsNil, check.Commentf("%q", line))
		es = append(es, e)
	}
	return es
}

// traversalRe is what a refused climb out of the root must say
// (layerindex.ErrTraversal's words, or dockerd's "breakout").
const traversalRe = `(?i)(climbs above the root|traversal|breakout)`

func (s *HostileFilesSuite) TestTraversalInEntryNamesRefused(c *check.C) {
	for _, name := range []string{"../../x", "a/../../x", "/../x", "./../../../x"} {
		sb := newSandbox(c)
		ref := s.pushLayers(c, "dotdot"+fmt.Sprint(len(name)), []ent{file("ok", "fine"), file(name, "climbed")})
		s.bounded(c, "traversal "+name, smallCaseKiB, func() {
			refused(c, s.d.Wharf(c, "ls", "-R", "--format", "json", "--remote", ref, "/"), traversalRe)
			refused(c, s.d.Wharf(c, "cat", "--remote", ref, "/ok"), traversalRe)
			r := s.d.Wharf(c, "cp", "--remote", ref+":/", sb.dest)
			c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
		})
		c.Assert(sb.escapes(c), check.HasLen, 0, check.Commentf("%s", name))
	}
}

// An absolute entry name is the same path under the root, as dockerd's
// applier reads it: listed and copied inside DEST.
func (s *HostileFilesSuite) TestAbsoluteEntryNamesStayInside(c *check.C) {
	sb := newSandbox(c)
	ref := s.pushLayers(c, "absolute", []ent{dirE("/abs/"), file("/abs/x", "absolute")})
	r := s.d.WharfOK(c, "ls", "-R", "--format", "json", "--remote", ref, "/")
	var paths []string
	for _, e := range entries(c, r.Stdout) {
		paths = append(paths, e.Path)
	}
	c.Assert(paths, check.DeepEquals, []string{"/abs", "/abs/x"})
	s.d.WharfOK(c, "cp", "--remote", ref+":/abs/x", sb.dest)
	c.Assert(readFile(filepath.Join(sb.dest, "x")), check.Equals, "absolute")
	c.Assert(sb.escapes(c), check.HasLen, 0)
}

// A symlink in the image that points out of the root (absolute, at a real
// directory of this host, or relative and climbing), then a file written
// through it (in the same layer, in a later one, and with the target
// present in the image): cp never writes outside DEST, and cat resolves
// the link inside the image, never reading the host's file.
func (s *HostileFilesSuite) TestSymlinkEscapesNeverLeaveDest(c *check.C) {
	sb := newSandbox(c)
	secret := filepath.Join(sb.outside, "host-secret")
	c.Assert(os.WriteFile(secret, []byte("HOST SECRET"), 0o600), check.IsNil)
	inImage := strings.TrimPrefix(sb.outside, "/")
	climb := strings.Repeat("../", 16) + inImage
	cases := map[string][][]ent{
		"esc-abs-later":   {{symlinkE("esc", sb.outside), symlinkE("secret", secret)}, {file("esc/pwned", "through the link")}},
		"esc-abs-same":    {{symlinkE("esc", sb.outside), file("esc/pwned", "through the link")}},
		"esc-rel-later":   {{symlinkE("esc", climb)}, {file("esc/pwned", "through the link")}},
		"esc-in-image":    {append(parentDirs(inImage+"/inside"), symlinkE("esc", sb.outside), file(inImage+"/inside", "in the image")), {file("esc/pwned", "through the link")}},
		"esc-dir-swapped": {{dirE("d/"), file("d/f", "f")}, {symlinkE("d", sb.outside)}, {file("d/g", "through the link")}},
	}
	for _, name := range sortedKeys(cases) {
		ref := s.pushLayers(c, name, cases[name]...)
		dest := filepath.Join(sb.dest, name)
		c.Assert(os.Mkdir(dest, 0o755), check.IsNil)
		s.bounded(c, name, smallCaseKiB, func() {
			r := s.d.Wharf(c, "cp", "--remote", ref+":/", dest)
			c.Logf("%s: cp exit %d %s", name, r.ExitCode, firstLine(r.Stderr))
			r = s.d.Wharf(c, "cp", "--remote", ref+":/esc/pwned", dest)
			c.Logf("%s: cp /esc/pwned exit %d %s", name, r.ExitCode, firstLine(r.Stderr))
			r = s.d.Wharf(c, "cp", "--remote", ref+":/", "-")
			c.Assert(strings.Contains(r.Stdout, "HOST SECRET"), check.Equals, false)
			r = s.d.Wharf(c, "cat", "--remote", ref, "/secret")
			c.Assert(strings.Contains(r.Stdout, "HOST SECRET"), check.Equals, false, check.Commentf("cat followed a link out of the image\n%s", r))
		})
		esc := sb.escapes(c)
		c.Assert(esc, check.DeepEquals, []string{secret}, check.Commentf("%s wrote outside DEST", name))
		c.Assert(readFile(secret), check.Equals, "HOST SECRET")
	}
}

// A symlink loop is listed as the links it is; resolving through it
// fails as the kernel's ELOOP does.
func (s *HostileFilesSuite) TestSymlinkLoop(c *check.C) {
	sb := newSandbox(c)
	ref := s.pushLayers(c, "loop", []ent{symlinkE("loop1", "loop2"), symlinkE("loop2", "/loop1"), symlinkE("self", "self"), dirE("d/"), symlinkE("d/up", "../d/up")})
	loopRe := `(?i)(too many levels of symbolic links|symlink loop|ELOOP)`
	s.bounded(c, "symlink loop", smallCaseKiB, func() {
		r := s.d.WharfOK(c, "ls", "-R", "--format", "json", "--remote", ref, "/")
		c.Assert(len(entries(c, r.Stdout)), check.Equals, 5, check.Commentf("%s", r))
		refused(c, s.d.Wharf(c, "cat", "--remote", ref, "/loop1"), loopRe)
		refused(c, s.d.Wharf(c, "cat", "--remote", ref, "/self/x"), loopRe)
		refused(c, s.d.Wharf(c, "ls", "--remote", ref, "/d/up/"), loopRe)
		r = s.d.Wharf(c, "cp", "--remote", ref+":/loop1/", sb.dest)
		c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	})
	c.Assert(sb.escapes(c), check.HasLen, 0)
}

// estargzFiles is an eStargz layer's content: a and b the same size, so
// that swapping their offsets keeps every size consistent.
func estargzFiles(c *check.C) []byte {
	return layerTar(c, file("a", strings.Repeat("A", 3000)), file("b", strings.Repeat("B", 3000)), file("c", "small"))
}

// A TOC whose offsets lie (a's chunks at b's place, and a file placed past
// the blob's end), re-annotated with its own digest so that only the
// offsets lie: the listing is the TOC's claim, but no byte a chunk digest
// does not vouch for reaches the caller.
func (s *HostileFilesSuite) TestEStargzTOCLyingOffsets(c *check.C) {
	blob, _ := estargzLayer(c, estargzFiles(c))
	swapped, swappedDigest := rewriteTOC(c, blob, func(toc *estargz.JTOC) []byte {
		var as, bs []*estargz.TOCEntry
		cur := ""
		for _, e := range toc.Entries {
			if e.Type != "chunk" {
				cur = e.Name
			}
			switch cur {
			case "a":
				as = append(as, e)
			case "b":
				bs = append(bs, e)
			}
		}
		c.Assert(len(as) > 0 && len(as) == len(bs), check.Equals, true)
		for i := range as {
			as[i].Offset, bs[i].Offset = bs[i].Offset, as[i].Offset
		}
		return marshalTOC(c, toc)
	})
	past, pastDigest := rewriteTOC(c, blob, func(toc *estargz.JTOC) []byte {
		for _, e := range toc.Entries {
			if e.Name == "c" {
				e.Offset = int64(len(blob)) + 1<<20
			}
		}
		return marshalTOC(c, toc)
	})
	refSwap := s.push(c, "toc-swapped", imageOfBlobs(c, [][]byte{swapped}, []map[string]string{tocAnnotation(swappedDigest)}))
	refPast := s.push(c, "toc-past-end", imageOfBlobs(c, [][]byte{past}, []map[string]string{tocAnnotation(pastDigest)}))
	s.bounded(c, "lying TOC offsets", smallCaseKiB, func() {
		r := s.d.WharfOK(c, "ls", "-R", "--format", "json", "--remote", refSwap, "/")
		c.Assert(len(entries(c, r.Stdout)) >= 3, check.Equals, true, check.Commentf("%s", r))
		r = s.d.Wharf(c, "cat", "--remote", refSwap, "/a")
		if r.ExitCode == 0 {
			// Served from a verified read of the layer instead: then the
			// bytes are a's.
			c.Assert(r.Stdout, check.Equals, strings.Repeat("A", 3000), check.Commentf("%s", r))
		} else {
			c.Assert(strings.Contains(r.Stdout, "B"), check.Equals, false, check.Commentf("unverified bytes reached the caller\n%s", r))
			refused(c, r, `(?i)(digest|mismatch|verif|hashes to)`)
		}
		r = s.d.Wharf(c, "cat", "--remote", refPast, "/c")
		if r.ExitCode == 0 {
			c.Assert(r.Stdout, check.Equals, "small", check.Commentf("%s", r))
		} else {
			refused(c, r, `(?i)(range|offset|outside|past|invalid|416|EOF)`)
		}
	})
}

// A TOC of 150 MiB + 1 byte of JSON (containers/storage's cap, and
// layertoc's): refused before it is held, with a clear error or by
// listing the layer from a streaming read instead.
func (s *HostileFilesSuite) TestEStargzTOCOverCap(c *check.C) {
	blob, _ := estargzLayer(c, estargzFiles(c))
	big, bigDigest := rewriteTOC(c, blob, func(toc *estargz.JTOC) []byte {
		js := marshalTOC(c, toc)
		const tocCap = 150 << 20
		pad := tocCap + 1 - len(js) - len(`,"padding":""`)
		out := append(append(append([]byte{}, js[:len(js)-1]...), `,"padding":"`...), bytes.Repeat([]byte("A"), pad)...)
		return append(out, `"}`...)
	})
	c.Logf("TOC over its cap: blob of %d bytes", len(big))
	ref := s.push(c, "toc-over-cap", imageOfBlobs(c, [][]byte{big}, []map[string]string{tocAnnotation(bigDigest)}))
	s.bounded(c, "TOC over its cap", overCapTOCKiB, func() {
		r := s.d.Wharf(c, "ls", "-R", "--format", "json", "--remote", ref, "/")
		if r.ExitCode != 0 {
			refused(c, r, `(?i)TOC.*(limit|cap|over|large)`)
			return
		}
		for _, e := range entries(c, r.Stdout) {
			c.Assert(e.Source, check.Not(check.Equals), "estargz", check.Commentf("an over-cap TOC was used: %+v", e))
		}
	})
}

// A TOC whose digest does not match the manifest's annotation is refused:
// a clear error, or an answer that does not come from it.
func (s *HostileFilesSuite) TestEStargzTOCDigestMismatchRefused(c *check.C) {
	blob, good := estargzLayer(c, estargzFiles(c))
	wrong := strings.Replace(good.String(), good.Encoded()[:8], "00000000", 1)
	ref := s.push(c, "toc-digest-mismatch", imageOfBlobs(c, [][]byte{blob}, []map[string]string{{"containerd.io/snapshot/stargz/toc.digest": wrong}}))
	s.bounded(c, "TOC digest mismatch", smallCaseKiB, func() {
		r := s.d.Wharf(c, "ls", "-R", "--format", "json", "--remote", ref, "/")
		if r.ExitCode != 0 {
			refused(c, r, `(?i)(digest mismatch|TOC JSON hashes to \S+, the annotation says)`)
			return
		}
		for _, e := range entries(c, r.Stdout) {
			c.Assert(e.Source, check.Not(check.Equals), "estargz", check.Commentf("a TOC with the wrong digest was used: %+v", e))
		}
		r = s.d.WharfOK(c, "cat", "--remote", ref, "/c")
		c.Assert(r.Stdout, check.Equals, "small")
	})
}

// A gzip bomb: 10 GiB of zeros in about 10 MiB (gzip members of 1 GiB of
// zeros, concatenated). The stream is capped at internal/decompress's
// 8 GiB + 128 × compressed bytes (about 9.3 GiB here): refused, with
// bounded memory.
func (s *HostileFilesSuite) TestGzipBombRefused(c *check.C) {
	// The config's diff ID is a hostile image's claim like the rest, and
	// computing the true one would inflate the 10 GiB here: any digest
	// does, as the layer is refused before its diff ID is compared.
	layer := bombLayer(c, 10)
	img := &testregistry.Image{}
	img.Platform.OS, img.Platform.Architecture = "linux", "amd64"
	img.Layers = []testregistry.Blob{testregistry.NewBlob(testregistry.MediaTypeOCILayer, layer)}
	img.DiffIDs = []string{digest.FromString("the diff ID of a bomb nobody inflates").String()}
	ref := s.push(c, "gzip-bomb", corpusImageOf(c, img, testregistry.MediaTypeOCIConfig, testregistry.MediaTypeOCIManifest, nil))
	s.bounded(c, "gzip bomb", bombKiB, func() {
		refused(c, s.d.Wharf(c, "ls", "-R", "--format", "json", "--remote", ref, "/"), `(?i)(decompress|ratio|bomb|limit|exceed|too large)`)
	})
}

// bombLayer is a tar of one file of gib GiB of zeros, as gzip members:
// the header, 16 members of 64 MiB of zeros per GiB (one member
// compressed once, about 64 KiB, then repeated), the tar's end.
func bombLayer(c *check.C, gib int) []byte {
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	// WriteHeader writes the header block at once; the body follows as
	// the members below, so the writer is never flushed or closed.
	c.Assert(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bomb", Size: int64(gib) << 30, Mode: 0o644, ModTime: corpusMtime}), check.IsNil)
	member := zeroMember(c, 64<<20)
	out := gzipLayer(c, hdr.Bytes())
	for i := 0; i < gib*16; i++ {
		out = append(out, member...)
	}
	return append(out, gzipLayer(c, make([]byte, 1024))...)
}

// 10⁶ tiny entries in one layer (about 9 MiB of gzip): refused at the
// index's entry cap, or served, within the bound either way.
func (s *HostileFilesSuite) TestMillionEntries(c *check.C) {
	ref := s.push(c, "million", imageOfBlobs(c, [][]byte{manyEntriesLayer(c, 1_000_000)}, nil))
	s.bounded(c, "10⁶ entries", manyEntriesKiB, func() {
		r := s.d.Wharf(c, "ls", "--format", "json", "--remote", ref, "/d0000")
		if r.ExitCode != 0 {
			refused(c, r, `(?i)(more than \d+ entries|limit)`)
			return
		}
		c.Assert(len(entries(c, r.Stdout)), check.Equals, 1000)
	})
}

// A zstd:chunked layer whose annotations lie: the TOC's checksum names
// other bytes, or its position points past the blob's end. Refused with a
// clear error, or answered without the TOC; never a listing built from
// bytes the checksum does not vouch for.
func (s *HostileFilesSuite) TestZstdChunkedTOCLiesRefused(c *check.C) {
	raw := estargzFiles(c)
	blob, ann := zstdChunkedLayer(c, raw)
	lie := func(name string, edit func(map[string]string)) string {
		a := map[string]string{}
		for k, v := range ann {
			a[k] = v
		}
		edit(a)
		img := &testregistry.Image{}
		img.Platform.OS, img.Platform.Architecture = "linux", "amd64"
		img.Layers = []testregistry.Blob{testregistry.NewBlob("application/vnd.oci.image.layer.v1.tar+zstd", blob)}
		img.DiffIDs = []string{sha(raw)}
		return s.push(c, name, corpusImageOf(c, img, testregistry.MediaTypeOCIConfig, testregistry.MediaTypeOCIManifest, []map[string]string{a}))
	}
	const checksum = "io.github.containers.zstd-chunked.manifest-checksum"
	const position = "io.github.containers.zstd-chunked.manifest-position"
	wrongSum := lie("zstd-checksum", func(a map[string]string) {
		a[checksum] = "sha256:" + strings.Repeat("0", 64)
	})
	pastEnd := lie("zstd-position", func(a map[string]string) {
		f := strings.Split(a[position], ":")
		f[0] = fmt.Sprint(len(blob) + 1<<20)
		a[position] = strings.Join(f, ":")
	})
	s.bounded(c, "lying zstd:chunked annotations", smallCaseKiB, func() {
		for _, tc := range []struct{ ref, want string }{
			{wrongSum, `(?i)(digest|mismatch|hashes to|checksum)`},
			{pastEnd, `(?i)(range|outside|past|invalid|416|position|offset)`},
		} {
			r := s.d.Wharf(c, "ls", "-R", "--format", "json", "--remote", tc.ref, "/")
			if r.ExitCode != 0 {
				refused(c, r, tc.want)
				continue
			}
			for _, e := range entries(c, r.Stdout) {
				c.Assert(e.Source, check.Not(check.Equals), "zstd:chunked", check.Commentf("a lying TOC was used: %+v", e))
			}
		}
	})
}
