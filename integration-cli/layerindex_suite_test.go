package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.podman.io/storage/pkg/chunked/compressor"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// LayerIndexSuite: the layer indexes behind wharf ls, cat and cp, through
// the real wharfd and wharf against the real registry behind token auth.
// Each index is built once per layer digest, survives a restart, is built
// by a pull in the pull's own pass, stays under layer-index-budget, and
// is reported in system df and the metrics. Requests are counted, never
// timed.
type LayerIndexSuite struct {
	suiteFixture
	reg    *testregistry.Registry
	name   string
	layers []string // the layers' digests
}

func TestLayerIndexSuite(t *testing.T) { t.Parallel(); runSuite(t, &LayerIndexSuite{}) }

func (s *LayerIndexSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken})
	ctx, cancel := fixtureCtx()
	defer cancel()
	img := liImage(c, ocispec.MediaTypeImageLayerGzip)
	c.Assert(s.reg.Client().PushImage(ctx, "li/app", "1", img), check.IsNil)
	for _, l := range img.Layers {
		s.layers = append(s.layers, l.Descriptor().Digest.String())
	}
	s.name = s.reg.Host + "/li/app:1"
}

// daemon starts a wharfd with metrics on a free port, logged in.
func (s *LayerIndexSuite) daemon(c *check.C, args ...string) *Daemon {
	d := s.startDaemon(c, append([]string{"--metrics-addr", "127.0.0.1:0"}, args...)...)
	r := d.WharfIn(c, []byte(s.reg.Password+"\n"), "login", s.reg.Host, "-u", s.reg.Username, "--password-stdin")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	return d
}

// metric is the value of one series of the daemon's latest start.
func (s *LayerIndexSuite) metric(c *check.C, d *Daemon, name string, labels map[string]string) float64 {
	resp, err := http.Get(lastWatchMetrics(c, d))
	c.Assert(err, check.IsNil)
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	c.Assert(err, check.IsNil)
	v, ok := metricFamilies(fams).sum(name, labels)
	c.Assert(ok, check.Equals, true, check.Commentf("no series %s%v", name, labels))
	return v
}

// layerRequests are the registry requests for the image's layers since
// the counters were reset.
func (s *LayerIndexSuite) layerRequests() []string {
	var out []string
	for _, l := range s.reg.RequestLog() {
		for _, d := range s.layers {
			if strings.Contains(l, "/blobs/"+d) {
				out = append(out, l)
			}
		}
	}
	return out
}

// diskUsage is GET /system/df's layer index fields.
func diskUsage(c *check.C, d *Daemon) (indexes, size float64) {
	var du map[string]any
	d.Get(c, "/system/df").JSON(c, &du)
	indexes, _ = du["LayerIndexes"].(float64)
	size, _ = du["LayerIndexesSize"].(float64)
	return indexes, size
}

// A remote listing builds each layer's index once (one streaming read of
// each layer); after a restart the same listing reads no blob.
func (s *LayerIndexSuite) TestRemoteIndexSurvivesRestart(c *check.C) {
	d := s.daemon(c)
	s.reg.ResetCounters()
	c.Assert(d.WharfOK(c, "ls", "--remote", "-R", s.name, "/").Stdout, check.Equals, liTree)
	c.Assert(s.layerRequests(), check.HasLen, 2, check.Commentf("layer requests of a cold listing: %v", s.layerRequests()))
	c.Assert(s.metric(c, d, "wharf_layer_indexes_built_total", map[string]string{"source": "stream"}), check.Equals, 2.0)
	c.Assert(s.metric(c, d, "wharf_layer_indexes", nil), check.Equals, 2.0)
	n, size := diskUsage(c, d)
	c.Assert(n, check.Equals, 2.0)
	c.Assert(size, check.Equals, s.metric(c, d, "wharf_layer_index_bytes", nil))

	d.Restart(c)
	s.reg.ResetCounters()
	c.Assert(d.WharfOK(c, "ls", "--remote", "-R", s.name, "/").Stdout, check.Equals, liTree)
	c.Assert(s.layerRequests(), check.HasLen, 0, check.Commentf("layer requests after a restart: %v", s.layerRequests()))
	c.Assert(s.metric(c, d, "wharf_layer_indexes_built_total", map[string]string{"source": "stream"}), check.Equals, 0.0)
	// A file read from a layer read whole is one Range request.
	s.reg.ResetCounters()
	c.Assert(d.WharfOK(c, "cat", "--remote", s.name, "/etc/hosts").Stdout, check.Equals, "127.0.0.1 localhost\n")
	c.Assert(s.layerRequests(), check.HasLen, 1, check.Commentf("layer requests of a warm cat: %v", s.layerRequests()))
}

// A pull builds the indexes of what it downloads in the same pass: the
// local listing afterwards builds none.
func (s *LayerIndexSuite) TestPullIndexesInTheSamePass(c *check.C) {
	d := s.daemon(c)
	d.WharfOK(c, "pull", s.name)
	c.Assert(s.metric(c, d, "wharf_layer_indexes_built_total", map[string]string{"source": "layer"}), check.Equals, 2.0)
	c.Assert(d.WharfOK(c, "ls", "-R", s.name, "/").Stdout, check.Equals, liTree)
	c.Assert(s.metric(c, d, "wharf_layer_indexes_built_total", map[string]string{"source": "layer"}), check.Equals, 2.0)
}

// Under a budget smaller than one index, every index is evicted as soon
// as it is written: the answer is still right, and the disk stays empty.
func (s *LayerIndexSuite) TestBudgetEvicts(c *check.C) {
	d := s.daemon(c, "--layer-index-budget", "1")
	c.Assert(d.WharfOK(c, "ls", "--remote", "-R", s.name, "/").Stdout, check.Equals, liTree)
	c.Assert(s.metric(c, d, "wharf_layer_indexes", nil), check.Equals, 0.0)
	c.Assert(s.metric(c, d, "wharf_layer_indexes_evicted_total", nil), check.Equals, 2.0)
	n, _ := diskUsage(c, d)
	c.Assert(n, check.Equals, 0.0)
}

// A zstd:chunked image is listed from its TOCs (Source "zstd:chunked") in
// one range request a layer, and a file is read by its chunks: every layer
// request is a Range request, none a whole-layer download.
func (s *LayerIndexSuite) TestZstdChunkedReadFromItsTOC(c *check.C) {
	img := liImage(c, ocispec.MediaTypeImageLayerZstd)
	layers := map[string]bool{}
	for _, l := range img.Layers {
		layers[l.Digest] = true
	}
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, "li/zstd", "1", img), check.IsNil)
	name := s.reg.Host + "/li/zstd:1"

	// layerGets are the GETs of the image's layers since the reset, and
	// those without a Range header.
	layerGets := func() (n int, whole []string) {
		reqs, ranges := s.reg.Counter.Requests(), s.reg.Counter.HeaderValues("Range")
		for i, q := range reqs {
			_, p, _ := strings.Cut(q, " ")
			if !strings.HasPrefix(q, "GET ") || !layers[p[strings.LastIndex(p, "/")+1:]] {
				continue
			}
			n++
			if i >= len(ranges) || ranges[i] == "" {
				whole = append(whole, q)
			}
		}
		return n, whole
	}
	d := s.daemon(c)
	s.reg.ResetCounters()
	r := d.WharfOK(c, "ls", "-R", "--format", "json", "--remote", name, "/")
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	c.Assert(len(lines) > 5, check.Equals, true, check.Commentf("%s", r.Stdout))
	for _, l := range lines {
		var e struct{ Path, Source string }
		c.Assert(json.Unmarshal([]byte(l), &e), check.IsNil)
		c.Assert(e.Source, check.Equals, "zstd:chunked", check.Commentf("%s", l))
	}
	n, whole := layerGets()
	c.Assert(n, check.Equals, len(img.Layers), check.Commentf("%v", s.reg.Counter.Requests()))
	c.Assert(whole, check.HasLen, 0)
	c.Assert(d.WharfOK(c, "ls", "-R", "--remote", name, "/").Stdout, check.Equals, liTree)

	s.reg.ResetCounters()
	c.Assert(d.WharfOK(c, "cat", "--remote", name, "/bin/tool-link").Stdout, check.Equals, "#!/bin/sh\necho tool\n")
	n, whole = layerGets()
	c.Assert(whole, check.HasLen, 0, check.Commentf("cat downloaded a whole layer"))
	c.Assert(n >= 1, check.Equals, true)
	c.Assert(s.metric(c, d, "wharf_layer_indexes_built_total", map[string]string{"source": "zstd:chunked"}), check.Equals, float64(len(img.Layers)))
}

// liEntry is one tar entry of the suite's image.
type liEntry struct {
	typ              byte
	name, link, body string
	mode             int64
}

var liTime = time.Date(2024, 3, 1, 10, 20, 0, 0, time.UTC)

// liLayers are the image's layers, bottom first: files, a symlink, a
// hardlink, and a whiteout above.
var liLayers = [][]liEntry{{
	{typ: tar.TypeDir, name: "bin/", mode: 0o755},
	{typ: tar.TypeReg, name: "bin/tool", mode: 0o755, body: "#!/bin/sh\necho tool\n"},
	{typ: tar.TypeLink, name: "bin/tool-link", link: "bin/tool"},
	{typ: tar.TypeDir, name: "etc/", mode: 0o755},
	{typ: tar.TypeReg, name: "etc/hosts", mode: 0o644, body: "127.0.0.1 localhost\n"},
	{typ: tar.TypeSymlink, name: "etc/os-release", link: "../usr/lib/os-release", mode: 0o777},
	{typ: tar.TypeDir, name: "usr/", mode: 0o755},
	{typ: tar.TypeDir, name: "usr/lib/", mode: 0o755},
	{typ: tar.TypeReg, name: "usr/lib/os-release", mode: 0o644, body: "ID=wharf\n"},
	{typ: tar.TypeDir, name: "var/", mode: 0o755},
	{typ: tar.TypeReg, name: "var/old", mode: 0o600, body: "gone above"},
}, {
	{typ: tar.TypeReg, name: "etc/motd", mode: 0o644, body: "hello\n"},
	{typ: tar.TypeReg, name: "var/.wh.old", mode: 0o600},
}}

// liTree is `ls -R /` of the merged view.
const liTree = "/bin\n/bin/tool\n/bin/tool-link\n/etc\n/etc/hosts\n/etc/motd\n/etc/os-release\n/usr\n/usr/lib\n/usr/lib/os-release\n/var\n"

// liImage is the suite's image with its layers compressed as mediaType
// says: gzip, or zstd:chunked (containers/storage's own compressor, which
// writes the TOC annotations).
func liImage(c *check.C, mediaType string) *testregistry.Image {
	img := &testregistry.Image{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}}
	var descs []ocispec.Descriptor
	for _, l := range liLayers {
		var raw bytes.Buffer
		tw := tar.NewWriter(&raw)
		for _, e := range l {
			h := &tar.Header{Typeflag: e.typ, Name: e.name, Linkname: e.link, Mode: e.mode, ModTime: liTime, Format: tar.FormatPAX}
			if e.typ == tar.TypeReg {
				h.Size = int64(len(e.body))
			}
			c.Assert(tw.WriteHeader(h), check.IsNil)
			_, err := tw.Write([]byte(e.body))
			c.Assert(err, check.IsNil)
		}
		c.Assert(tw.Close(), check.IsNil)
		var b bytes.Buffer
		ann := map[string]string{}
		if mediaType == ocispec.MediaTypeImageLayerZstd {
			w, err := compressor.ZstdCompressor(&b, ann, nil)
			c.Assert(err, check.IsNil)
			_, err = w.Write(raw.Bytes())
			c.Assert(err, check.IsNil)
			c.Assert(w.Close(), check.IsNil)
		} else {
			zw := gzip.NewWriter(&b)
			_, err := zw.Write(raw.Bytes())
			c.Assert(err, check.IsNil)
			c.Assert(zw.Close(), check.IsNil)
		}
		blob := testregistry.NewBlob(mediaType, b.Bytes())
		img.Layers = append(img.Layers, blob)
		img.DiffIDs = append(img.DiffIDs, digest.FromBytes(raw.Bytes()).String())
		d := blob.Descriptor()
		if len(ann) > 0 {
			d.Annotations = ann
		}
		descs = append(descs, d)
	}
	cfg, err := json.Marshal(map[string]any{"architecture": "amd64", "os": "linux", "rootfs": map[string]any{"type": "layers", "diff_ids": img.DiffIDs}})
	c.Assert(err, check.IsNil)
	img.Config = testregistry.NewBlob(testregistry.MediaTypeOCIConfig, cfg)
	m, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": testregistry.MediaTypeOCIManifest, "config": img.Config.Descriptor(), "layers": descs})
	c.Assert(err, check.IsNil)
	img.Manifest = testregistry.NewBlob(testregistry.MediaTypeOCIManifest, m)
	return img
}
