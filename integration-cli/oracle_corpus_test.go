package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/storage/pkg/chunked/compressor"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// corpusMtime is every corpus entry's mtime: a whole second, so that
// docker export's second-resolution times compare exactly.
var corpusMtime = time.Unix(1700000000, 0)

// ent is one tar entry of a corpus layer. typ 0 is a regular file; raw,
// when set, is written as is (a hand-made entry archive/tar refuses).
type ent struct {
	name     string
	typ      byte
	body     string
	link     string
	mode     int64
	uid, gid int
	format   tar.Format
	pax      map[string]string
	raw      []byte
}

func file(name, body string) ent        { return ent{name: name, typ: tar.TypeReg, body: body} }
func dirE(name string) ent              { return ent{name: name, typ: tar.TypeDir} }
func symlinkE(name, target string) ent  { return ent{name: name, typ: tar.TypeSymlink, link: target} }
func hardlinkE(name, target string) ent { return ent{name: name, typ: tar.TypeLink, link: target} }
func whiteoutE(dir, name string) ent    { return file(filepath.Join(dir, ".wh."+name), "") }
func opaqueE(dir string) ent            { return file(filepath.Join(dir, ".wh..wh..opq"), "") }
func modeE(e ent, mode int64, uid, gid int) ent {
	e.mode, e.uid, e.gid = mode, uid, gid
	return e
}

// layerTar writes ents as an uncompressed layer.
func layerTar(c *check.C, ents ...ent) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		if e.raw != nil {
			c.Assert(tw.Flush(), check.IsNil)
			buf.Write(e.raw)
			continue
		}
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			ModTime: corpusMtime, Format: e.format, PAXRecords: e.pax}
		if h.Mode == 0 {
			h.Mode = 0o644
			if e.typ == tar.TypeDir {
				h.Mode = 0o755
			} else if e.typ == tar.TypeSymlink {
				h.Mode = 0o777
			}
		}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		c.Assert(tw.WriteHeader(h), check.IsNil, check.Commentf("%s", e.name))
		if h.Size > 0 {
			_, err := tw.Write([]byte(e.body))
			c.Assert(err, check.IsNil)
		}
	}
	c.Assert(tw.Close(), check.IsNil)
	return buf.Bytes()
}

func gzipLayer(c *check.C, raw []byte) []byte {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write(raw)
	c.Assert(err, check.IsNil)
	c.Assert(zw.Close(), check.IsNil)
	return gz.Bytes()
}

// corpusImage is a single-platform image of the given uncompressed layers
// (gzip), OCI or Docker schema2 media types. Annotations go on each layer
// descriptor (layerAnn[i], when given).
func corpusImage(c *check.C, docker bool, raws [][]byte, layerAnn ...map[string]string) *testregistry.Image {
	layerType, configType, manifestType := testregistry.MediaTypeOCILayer, testregistry.MediaTypeOCIConfig, testregistry.MediaTypeOCIManifest
	if docker {
		layerType, configType, manifestType = testregistry.MediaTypeDockerLayer, testregistry.MediaTypeDockerConfig, testregistry.MediaTypeDockerManifest
	}
	img := &testregistry.Image{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}}
	for _, raw := range raws {
		img.Layers = append(img.Layers, testregistry.NewBlob(layerType, gzipLayer(c, raw)))
		img.DiffIDs = append(img.DiffIDs, digest.FromBytes(raw).String())
	}
	return corpusImageOf(c, img, configType, manifestType, layerAnn)
}

// corpusImageOf finishes img (layers and diff IDs set): config and manifest.
func corpusImageOf(c *check.C, img *testregistry.Image, configType, manifestType string, layerAnn []map[string]string) *testregistry.Image {
	cfg, err := json.Marshal(map[string]any{
		"architecture": img.Platform.Architecture, "os": img.Platform.OS,
		"created": corpusMtime.UTC().Format(time.RFC3339),
		"config":  map[string]any{"Cmd": []string{"/bin/true"}},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": img.DiffIDs},
	})
	c.Assert(err, check.IsNil)
	img.Config = testregistry.NewBlob(configType, cfg)
	var layers []ocispec.Descriptor
	for i, l := range img.Layers {
		d := l.Descriptor()
		if i < len(layerAnn) {
			d.Annotations = layerAnn[i]
		}
		layers = append(layers, d)
	}
	m, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": manifestType, "config": img.Config.Descriptor(), "layers": layers})
	c.Assert(err, check.IsNil)
	img.Manifest = testregistry.NewBlob(manifestType, m)
	return img
}

// writeOCILayout writes img as an OCI image layout tagged "t", for umoci.
// A Docker schema2 image is written with the OCI media types (the same
// blobs): umoci reads OCI manifests only.
func writeOCILayout(c *check.C, dir string, img *testregistry.Image) {
	if img.Manifest.MediaType != testregistry.MediaTypeOCIManifest {
		oci := &testregistry.Image{Platform: img.Platform, DiffIDs: img.DiffIDs}
		for _, l := range img.Layers {
			oci.Layers = append(oci.Layers, testregistry.NewBlob(testregistry.MediaTypeOCILayer, l.Data))
		}
		img = corpusImageOf(c, oci, testregistry.MediaTypeOCIConfig, testregistry.MediaTypeOCIManifest, nil)
	}
	blobs := filepath.Join(dir, "blobs", "sha256")
	c.Assert(os.MkdirAll(blobs, 0o755), check.IsNil)
	for _, b := range append([]testregistry.Blob{img.Manifest, img.Config}, img.Layers...) {
		c.Assert(os.WriteFile(filepath.Join(blobs, strings.TrimPrefix(b.Digest, "sha256:")), b.Data, 0o644), check.IsNil)
	}
	md := img.Manifest.Descriptor()
	md.Annotations = map[string]string{ocispec.AnnotationRefName: "t"}
	ix, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": ocispec.MediaTypeImageIndex, "manifests": []ocispec.Descriptor{md}})
	c.Assert(err, check.IsNil)
	c.Assert(os.WriteFile(filepath.Join(dir, "index.json"), ix, 0o644), check.IsNil)
	c.Assert(os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644), check.IsNil)
}

// corpusCase is one image of the correctness corpus.
type corpusCase struct {
	name   string // also the repository: oracle/<name>
	docker bool   // Docker schema2 media types instead of OCI
	// estargz builds every layer as eStargz (containerd's estargz, 1 KiB
	// chunks) with its TOC digest annotated: listed from the TOC, read by
	// chunks, and still plain gzip to the oracles.
	estargz bool
	// zstdChunked builds every layer as zstd:chunked (containers/storage's
	// compressor) for wharf. dockerd 20.10 and umoci read no zstd, so the
	// oracles get a twin image of the same tars in gzip (pushTwin): the
	// filesystem is the uncompressed tars'.
	zstdChunked bool
	layers      [][]ent
}

// longPath is a 244-byte path under top: too long for ustar's 100-byte
// name, so it needs a PAX or GNU long-name header.
func longPath(top string) string {
	return top + "/" + strings.Repeat("long-directory-name/", 12) + "file"
}

// parentDirs are directory entries for every parent of p, top first. Each
// corpus layer names its directories, as image builders do: a parent a
// layer leaves implied has no single answer (dockerd's layer unpack
// creates it 0600, umoci 0755).
func parentDirs(p string) []ent {
	var out []ent
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		out = append(out, dirE(strings.Join(parts[:i], "/")+"/"))
	}
	return out
}

// longNamesLayer has names and a link target over ustar's 100 bytes (PAX
// and GNU long-name headers), ids over ustar's 2097151, a UTF-8 name and
// PAX records that are not the file's.
func longNamesLayer() []ent {
	l := append(parentDirs(longPath("pax")), ent{name: longPath("pax"), typ: tar.TypeReg, body: "pax long", format: tar.FormatPAX})
	for _, d := range parentDirs(longPath("gnu")) {
		d.format = tar.FormatGNU
		l = append(l, d)
	}
	return append(l, ent{name: longPath("gnu"), typ: tar.TypeReg, body: "gnu long", format: tar.FormatGNU},
		ent{name: "bigid", typ: tar.TypeReg, body: "uid over ustar's 2097151", uid: 3000000, gid: 3000001, mode: 0o644},
		ent{name: "longlink", typ: tar.TypeSymlink, link: "/" + longPath("gnu"), format: tar.FormatPAX},
		file("ünïcode-名前.txt", "utf-8 name"),
		ent{name: "paxrecords", typ: tar.TypeReg, body: "pax records", format: tar.FormatPAX, pax: map[string]string{"comment": "kept out of the file"}})
}

// corpusCases are the cases, each a few layers written here.
func corpusCases() []corpusCase {
	return []corpusCase{
		{name: "whiteouts", layers: [][]ent{
			{dirE("a/"), file("a/keep", "keep"), file("a/gone", "gone"), dirE("d/"), file("d/x", "x"), dirE("d/sub/"), file("d/sub/y", "y"), file("top", "top")},
			// A file whited out, and a directory a lower layer filled.
			{whiteoutE("a", "gone"), whiteoutE("", "d")},
			// A whiteout of a path that never existed is a no-op.
			{whiteoutE("a", "never")},
		}},
		{name: "opaque", layers: [][]ent{
			{dirE("o/"), file("o/old1", "1"), dirE("o/sub/"), file("o/sub/old2", "2"), dirE("p/"), file("p/stays", "s")},
			{dirE("o/"), opaqueE("o"), file("o/new", "new")},
		}},
		{name: "file-dir-swap", layers: [][]ent{
			{file("fd", "a file first"), dirE("df/"), file("df/inner", "inner"), dirE("df/deep/"), file("df/deep/z", "z")},
			// The file becomes a directory, the directory a file.
			{dirE("fd/"), file("fd/child", "child"), file("df", "a file now")},
		}},
		// A hardlink header carries its inode's mode and owner, as every
		// writer that stats the file does: dockerd applies a hardlink
		// header's mode and owner to the shared inode, umoci keeps the
		// target's, so headers that differ have no single answer.
		{name: "hardlinks", layers: [][]ent{
			{dirE("h/"), modeE(file("h/a", "shared body"), 0o640, 5, 6), modeE(hardlinkE("h/b", "h/a"), 0o640, 5, 6), modeE(hardlinkE("h/c", "h/a"), 0o640, 5, 6),
				file("h/t", "target body"), hardlinkE("h/u", "h/t"), file("h/r", "old bytes"), hardlinkE("h/s", "h/r")},
			// The link's target removed above it, or replaced: the other
			// name keeps the bytes it shared, and is no link any more.
			{whiteoutE("h", "t"), file("h/r", "new bytes, another inode")},
		}},
		{name: "symlinks", layers: [][]ent{
			{dirE("s/"), file("s/target", "pointed at"), dirE("bin/"), file("bin/tool", "tool"),
				symlinkE("abs", "/bin/tool"), symlinkE("s/rel", "../bin/tool"),
				symlinkE("c1", "c2"), symlinkE("c2", "s/c3"), symlinkE("s/c3", "target"),
				symlinkE("loop1", "loop2"), symlinkE("loop2", "loop1"), symlinkE("self", "self"),
				symlinkE("out", "../../../../etc/passwd"), symlinkE("dangling", "/no/such/file"),
				symlinkE("dirlink", "s")},
		}},
		{name: "long-names-pax", layers: [][]ent{
			longNamesLayer(),
			{hardlinkE("h-to-long", longPath("pax"))},
		}},
		{name: "sparse", layers: [][]ent{
			{dirE("sp/"), ent{raw: testregistry.SparseTarEntry("sp/holes", 1<<20, []byte("tail"))}, file("sp/after", "after")},
		}},
		{name: "setuid", layers: [][]ent{
			{dirE("bin/"), modeE(file("bin/su", "su"), 0o4755, 0, 0), modeE(file("bin/sg", "sg"), 0o2711, 42, 43),
				modeE(file("bin/both", "both"), 0o6750, 7, 8), modeE(dirE("tmp/"), 0o1777, 0, 0),
				ent{name: "pipe", typ: tar.TypeFifo, mode: 0o600}},
			// An upper layer changes a directory's owner and mode only.
			{modeE(dirE("bin/"), 0o700, 9, 9)},
		}},
		{name: "empty-layer", layers: [][]ent{
			{file("before", "b")},
			{},
			{file("after", "a")},
		}},
		{name: "docker-media-types", docker: true, layers: [][]ent{
			{dirE("etcish/"), file("etcish/conf", "v1"), symlinkE("link", "etcish/conf")},
			{file("etcish/conf", "v2"), whiteoutE("", "link")},
		}},
		{name: "estargz", estargz: true, layers: [][]ent{
			{dirE("app/"), file("app/big", strings.Repeat("0123456789abcdef", 400)), file("app/small", "s"),
				modeE(file("app/run", "#!/bin/sh\n"), 0o755, 1, 2), symlinkE("app/link", "big"), hardlinkE("app/hard", "app/big"),
				dirE("gone/"), file("gone/x", "x")},
			{whiteoutE("", "gone"), dirE("app/"), file("app/small", "replaced")},
		}},
		{name: "links-across-layers", layers: [][]ent{
			{dirE("d/"), file("d/a", "lower bytes"), dirE("real/"), file("real/old", "o"), symlinkE("ln", "real"),
				dirE("todir/"), file("todir/f", "f"), symlinkE("tolink", "real")},
			// A hardlink to a lower layer's file; a directory replaced by a
			// symlink and a symlink by a directory.
			{hardlinkE("d/b", "d/a"), whiteoutE("", "todir"), symlinkE("todir", "d"), whiteoutE("", "tolink"), dirE("tolink/"), file("tolink/g", "g")},
			// A file written through a symlinked parent lands in its target.
			{file("ln/new", "through ln")},
		}},
		{name: "zstd-chunked", zstdChunked: true, layers: [][]ent{
			{dirE("z/"), file("z/big", strings.Repeat("zstd:chunked ", 2000)), file("z/small", "s"), symlinkE("z/link", "big"),
				hardlinkE("z/hard", "z/big"), modeE(file("z/suid", "x"), 0o4711, 3, 4), dirE("z/gone/"), file("z/gone/f", "f")},
			{whiteoutE("z", "gone"), dirE("z/"), file("z/small", "replaced")},
		}},
		{name: "devices", layers: [][]ent{
			{dirE("devs/"), ent{name: "devs/null", typ: tar.TypeChar, mode: 0o666}, ent{name: "devs/loop", typ: tar.TypeBlock, mode: 0o660, gid: 6},
				ent{name: "devs/fifo", typ: tar.TypeFifo, mode: 0o620}},
		}},
		// go-containerregistry#2029: a directory removed (rm -rf) and made
		// again in a later layer; its old files must not come back.
		{name: "ggcr-2029", layers: [][]ent{
			{dirE("test/")},
			{dirE("test/"), file("test/hello.txt", "Hello World\n")},
			{whiteoutE("", "test")},
			{dirE("test/")},
			{dirE("test/"), file("test/hello2.txt", "Hello World\n")},
		}},
	}
}

// pushCase builds a case's image and pushes it as oracle/<name>:1.
func pushCase(c *check.C, reg *testregistry.Registry, tc corpusCase) (*testregistry.Image, string) {
	var raws [][]byte
	for _, l := range tc.layers {
		raws = append(raws, layerTar(c, l...))
	}
	var img *testregistry.Image
	if tc.zstdChunked {
		img = &testregistry.Image{}
		img.Platform.OS, img.Platform.Architecture = "linux", "amd64"
		var anns []map[string]string
		for _, raw := range raws {
			b, ann := zstdChunkedLayer(c, raw)
			img.Layers = append(img.Layers, testregistry.NewBlob(ocispec.MediaTypeImageLayerZstd, b))
			img.DiffIDs = append(img.DiffIDs, digest.FromBytes(raw).String())
			anns = append(anns, ann)
		}
		img = corpusImageOf(c, img, testregistry.MediaTypeOCIConfig, testregistry.MediaTypeOCIManifest, anns)
	} else if tc.estargz {
		var blobs [][]byte
		var anns []map[string]string
		for _, raw := range raws {
			b, toc := estargzLayer(c, raw)
			blobs, anns = append(blobs, b), append(anns, tocAnnotation(toc))
		}
		img = imageOfBlobs(c, blobs, anns)
	} else {
		img = corpusImage(c, tc.docker, raws)
	}
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(reg.Client().PushImage(ctx, "oracle/"+tc.name, "1", img), check.IsNil)
	return img, reg.Host + "/oracle/" + tc.name + ":1"
}

// pushTwin pushes the case's tars as a plain gzip image, oracle/<name>-gzip:1,
// for the oracles of a case whose own layers they cannot read.
func pushTwin(c *check.C, reg *testregistry.Registry, tc corpusCase) (*testregistry.Image, string) {
	twin := tc
	twin.name, twin.zstdChunked, twin.estargz = tc.name+"-gzip", false, false
	return pushCase(c, reg, twin)
}

// zstdChunkedLayer compresses raw as zstd:chunked with containers/storage's
// compressor, returning the blob and the annotations it sets (the TOC's
// position and digest).
func zstdChunkedLayer(c *check.C, raw []byte) ([]byte, map[string]string) {
	var b bytes.Buffer
	ann := map[string]string{}
	w, err := compressor.ZstdCompressor(&b, ann, nil)
	c.Assert(err, check.IsNil)
	_, err = w.Write(raw)
	c.Assert(err, check.IsNil)
	c.Assert(w.Close(), check.IsNil)
	return b.Bytes(), ann
}
