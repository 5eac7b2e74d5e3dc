package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/containerd/stargz-snapshotter/estargz"
	"github.com/opencontainers/go-digest"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// The hostile layers of HostileFilesSuite, written here: eStargz layers
// built with the maintained library (containerd's estargz) and then
// altered so that exactly one claim lies, and stream layers that cost
// much to read.

// estargzLayer builds an eStargz blob of raw (an uncompressed tar) with
// the library, in 1 KiB chunks so that files span several chunks. It
// returns the blob and the TOC digest the annotation carries.
func estargzLayer(c *check.C, raw []byte) ([]byte, digest.Digest) {
	return estargzLayerChunked(c, raw, 1024)
}

// estargzLayerChunked is estargzLayer with chunks of chunk bytes: each
// chunk is a gzip member of its own, so 1 KiB chunks of a 15 MB binary
// cost seconds of deflate set-up where a suite needs no small chunks.
func estargzLayerChunked(c *check.C, raw []byte, chunk int) ([]byte, digest.Digest) {
	blob, err := estargz.Build(io.NewSectionReader(bytes.NewReader(raw), 0, int64(len(raw))), estargz.WithChunkSize(chunk))
	c.Assert(err, check.IsNil)
	defer blob.Close()
	b, err := io.ReadAll(blob)
	c.Assert(err, check.IsNil)
	return b, blob.TOCDigest()
}

// rewriteTOC replaces an eStargz blob's TOC with the JSON edit returns
// (given the parsed TOC), keeping every byte before it and writing a
// footer that points at it, so that only what edit changed differs. It
// returns the blob and the new JSON's digest: an annotation made of it
// is consistent, and the TOC's lie is the only one.
func rewriteTOC(c *check.C, blob []byte, edit func(*estargz.JTOC) []byte) ([]byte, digest.Digest) {
	sr := io.NewSectionReader(bytes.NewReader(blob), 0, int64(len(blob)))
	tocOff, footerN, err := estargz.OpenFooter(sr)
	c.Assert(err, check.IsNil)
	toc, _, err := (&estargz.GzipDecompressor{}).ParseTOC(bytes.NewReader(blob[tocOff : int64(len(blob))-footerN]))
	c.Assert(err, check.IsNil)
	js := edit(toc)
	var out bytes.Buffer
	out.Write(blob[:tocOff])
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	c.Assert(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: estargz.TOCTarName, Size: int64(len(js))}), check.IsNil)
	_, err = tw.Write(js)
	c.Assert(err, check.IsNil)
	c.Assert(tw.Close(), check.IsNil)
	c.Assert(zw.Close(), check.IsNil)
	// The footer is the library's own, for the same offset.
	var scratch bytes.Buffer
	_, err = estargz.NewGzipCompressor().WriteTOCAndFooter(&scratch, tocOff, &estargz.JTOC{Version: 1}, nil)
	c.Assert(err, check.IsNil)
	out.Write(scratch.Bytes()[scratch.Len()-estargz.FooterSize:])
	return out.Bytes(), digest.FromBytes(js)
}

func marshalTOC(c *check.C, toc *estargz.JTOC) []byte {
	b, err := json.MarshalIndent(toc, "", "\t")
	c.Assert(err, check.IsNil)
	return b
}

// diffID is the digest of a (multi-member) gzip blob's uncompressed bytes.
func diffID(c *check.C, blob []byte) string {
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	c.Assert(err, check.IsNil)
	d := digest.SHA256.Digester()
	_, err = io.Copy(d.Hash(), zr)
	c.Assert(err, check.IsNil)
	return d.Digest().String()
}

// imageOfBlobs is an OCI image of already compressed layers, each with
// its annotations.
func imageOfBlobs(c *check.C, blobs [][]byte, ann []map[string]string) *testregistry.Image {
	img := &testregistry.Image{}
	img.Platform.OS, img.Platform.Architecture = "linux", "amd64"
	for _, b := range blobs {
		img.Layers = append(img.Layers, testregistry.NewBlob(testregistry.MediaTypeOCILayer, b))
		img.DiffIDs = append(img.DiffIDs, diffID(c, b))
	}
	return corpusImageOf(c, img, testregistry.MediaTypeOCIConfig, testregistry.MediaTypeOCIManifest, ann)
}

func tocAnnotation(d digest.Digest) map[string]string {
	return map[string]string{"containerd.io/snapshot/stargz/toc.digest": d.String()}
}

// manyEntriesLayer is a gzip layer of n empty files in directories of
// 1,000 (names short, so the tar is n × 512-byte headers).
func manyEntriesLayer(c *check.C, n int) []byte {
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	c.Assert(err, check.IsNil)
	tw := tar.NewWriter(zw)
	for i := 0; i < n; i++ {
		if i%1000 == 0 {
			c.Assert(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: fmt.Sprintf("d%04d/", i/1000), Mode: 0o755, ModTime: corpusMtime}), check.IsNil)
		}
		c.Assert(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("d%04d/%d", i/1000, i), Mode: 0o644, ModTime: corpusMtime}), check.IsNil)
	}
	c.Assert(tw.Close(), check.IsNil)
	c.Assert(zw.Close(), check.IsNil)
	return gz.Bytes()
}

// zeroMember is one gzip member of n zero bytes at gzip's best ratio
// (about 1000:1).
func zeroMember(c *check.C, n int64) []byte {
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	c.Assert(err, check.IsNil)
	zeros := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(zeros)) {
		_, err := zw.Write(zeros[:min(left, int64(len(zeros)))])
		c.Assert(err, check.IsNil)
	}
	c.Assert(zw.Close(), check.IsNil)
	return gz.Bytes()
}

// sandbox is a directory holding DEST and a sibling "outside" that a cp
// must never write into.
type sandbox struct{ root, dest, outside string }

func newSandbox(c *check.C) sandbox {
	root := c.MkDir()
	s := sandbox{root: root, dest: filepath.Join(root, "dest"), outside: filepath.Join(root, "outside")}
	c.Assert(os.Mkdir(s.dest, 0o755), check.IsNil)
	c.Assert(os.Mkdir(s.outside, 0o755), check.IsNil)
	return s
}

// escapes lists what is in the sandbox but not under DEST: it must be
// nothing but the empty "outside" itself.
func (s sandbox) escapes(c *check.C) []string {
	var out []string
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == s.root || p == s.outside || p == s.dest {
			return nil
		}
		if strings.HasPrefix(p, s.dest+string(filepath.Separator)) {
			return nil
		}
		out = append(out, p)
		return nil
	})
	c.Assert(err, check.IsNil)
	sort.Strings(out)
	return out
}
