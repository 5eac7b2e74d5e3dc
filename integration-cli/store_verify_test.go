package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// StoreVerifySuite: what pull and load must verify before they record an
// image (issue 9): a pull whose config's diff_ids disagree with its layers
// is refused; a load whose descriptors' sizes disagree with the blobs is
// refused, and a missing mediaType is filled in; a load's CPU cost does not
// grow with how often an archive lists one layer, and it stops when the
// client leaves. Every refusal leaves nothing behind: no image, and no blob
// that no image uses.
type StoreVerifySuite struct {
	suiteFixture
	reg *testregistry.Registry
}

// Not in parallel: TestLoadRepeatedLayerHashedOnce measures wharfd's CPU
// time within a wall-clock deadline (10 s), which the other suites' load
// on 2 cores would eat.
func TestStoreVerifySuite(t *testing.T) { runSuite(t, &StoreVerifySuite{}) }

func (s *StoreVerifySuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
}

// Media types of uncompressed layers, whose digest is their diff ID.
const (
	verifyDockerTarLayer = "application/vnd.docker.image.rootfs.diff.tar"
	verifyOCITarLayer    = ocispec.MediaTypeImageLayer
)

// ---------------------------------------------------------------- store state

// TestPullRefusesFewerDiffIDsThanLayers: a config with one diff_id for two
// (gzip) layers. Old code pulled and saved it; its own load then refused it.
func (s *StoreVerifySuite) TestPullRefusesFewerDiffIDsThanLayers(c *check.C) {
	l0 := tarLayer(c, "a/0.bin", testregistry.MediaTypeDockerLayer)
	l1 := tarLayer(c, "a/1.bin", testregistry.MediaTypeDockerLayer)
	cfg := imageConfig(c, []string{l0.diffID}, testregistry.MediaTypeDockerConfig)
	ref := s.push(c, "verify/fewer", "1", registryImage(c, true, cfg, []rawLayer{l0, l1}))
	assertPullRefused(c, ref)
}

// TestPullRefusesWrongDiffIDsOfTarLayers: uncompressed layers (their
// digest is their diff ID) under a config whose diff_ids are wrong: the two
// right values in the wrong order (Docker media types), and a random value
// for the last layer (OCI media types).
func (s *StoreVerifySuite) TestPullRefusesWrongDiffIDsOfTarLayers(c *check.C) {
	l0 := tarLayer(c, "b/0.bin", verifyDockerTarLayer)
	l1 := tarLayer(c, "b/1.bin", verifyDockerTarLayer)
	c.Assert(l0.diffID, check.Equals, l0.blob.Digest)
	cfg := imageConfig(c, []string{l1.diffID, l0.diffID}, testregistry.MediaTypeDockerConfig)
	ref := s.push(c, "verify/swapped", "1", registryImage(c, true, cfg, []rawLayer{l0, l1}))
	assertPullRefused(c, ref)

	o0 := tarLayer(c, "c/0.bin", verifyOCITarLayer)
	o1 := tarLayer(c, "c/1.bin", verifyOCITarLayer)
	wrong := digest.FromString("not the layer").String()
	cfg = imageConfig(c, []string{o0.diffID, wrong}, testregistry.MediaTypeOCIConfig)
	ref = s.push(c, "verify/wrong-oci", "1", registryImage(c, false, cfg, []rawLayer{o0, o1}))
	assertPullRefused(c, ref)
}

// TestPullSaveLoadUncompressedLayers is the positive control: a correct
// image with uncompressed layers pulls, saves, and loads back whole.
func (s *StoreVerifySuite) TestPullSaveLoadUncompressedLayers(c *check.C) {
	d := StartDaemon(c)
	defer d.Kill()
	l0 := tarLayer(c, "d/0.bin", verifyDockerTarLayer)
	l1 := tarLayer(c, "d/1.bin", verifyDockerTarLayer)
	cfg := imageConfig(c, []string{l0.diffID, l1.diffID}, testregistry.MediaTypeDockerConfig)
	ref := s.push(c, "verify/plain", "1", registryImage(c, true, cfg, []rawLayer{l0, l1}))

	d.WharfOK(c, "pull", ref)
	got := d.WharfOK(c, "inspect", "--format", "{{.Id}}", ref)
	c.Assert(strings.TrimSpace(got.Stdout), check.Equals, cfg.Digest)
	assertStoreClean(c, d, "after the pull")

	out := filepath.Join(c.MkDir(), "plain.tar")
	d.WharfOK(c, "save", "-o", out, ref)
	d.WharfOK(c, "rmi", ref)
	c.Assert(imageIDs(c, d), check.HasLen, 0)
	d.WharfOK(c, "load", "-i", out)
	insp := d.Inspect(c, ref)
	c.Assert(insp["Id"], check.Equals, cfg.Digest)
	layers, _ := insp["RootFS"].(map[string]any)["Layers"].([]any)
	c.Assert(layers, check.DeepEquals, []any{l0.diffID, l1.diffID})
	assertStoreClean(c, d, "after save and load")
}

// ------------------------------------------------------------------- 2. load

// ociArchiveOpts shape a hand-made OCI-layout archive of one image.
type ociArchiveOpts struct {
	name string // io.containerd.image.name of the index entry
	// Added to the size of a descriptor (0: the right size).
	indexSizeDelta, configSizeDelta, layerSizeDelta int64
	// Leave mediaType out of the index.json entry / the manifest.
	noIndexMediaType, noManifestMediaType bool
}

type ociArchive struct {
	tar              []byte
	manifest, config testregistry.Blob
	layer            rawLayer
}

func buildOCIArchive(c *check.C, o ociArchiveOpts) ociArchive {
	a := ociArchive{layer: tarLayer(c, "e/data.bin", testregistry.MediaTypeOCILayer)}
	a.config = imageConfig(c, []string{a.layer.diffID}, testregistry.MediaTypeOCIConfig)
	cd, ld := a.config.Descriptor(), a.layer.blob.Descriptor()
	cd.Size += o.configSizeDelta
	ld.Size += o.layerSizeDelta
	m := map[string]any{"schemaVersion": 2, "config": cd, "layers": []ocispec.Descriptor{ld}}
	if !o.noManifestMediaType {
		m["mediaType"] = ocispec.MediaTypeImageManifest
	}
	mb, err := json.Marshal(m)
	c.Assert(err, check.IsNil)
	a.manifest = testregistry.NewBlob(ocispec.MediaTypeImageManifest, mb)
	entry := map[string]any{
		"mediaType": ocispec.MediaTypeImageManifest,
		"digest":    a.manifest.Digest,
		"size":      int64(len(mb)) + o.indexSizeDelta,
		"annotations": map[string]string{
			"io.containerd.image.name":          o.name,
			"org.opencontainers.image.ref.name": o.name[strings.LastIndex(o.name, ":")+1:],
		},
	}
	if o.noIndexMediaType {
		delete(entry, "mediaType")
	}
	ib, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": ocispec.MediaTypeImageIndex, "manifests": []any{entry}})
	c.Assert(err, check.IsNil)
	blobEntry := func(b testregistry.Blob) tarEntry {
		return tarEntry{name: "blobs/sha256/" + strings.TrimPrefix(b.Digest, "sha256:"), body: string(b.Data)}
	}
	a.tar = makeTar(c, []tarEntry{
		{name: "oci-layout", body: `{"imageLayoutVersion":"1.0.0"}`},
		blobEntry(a.layer.blob), blobEntry(a.config), blobEntry(a.manifest),
		{name: "index.json", body: string(ib)},
	})
	return a
}

// loadArchive POSTs an archive to /images/load and returns the error the
// client is given ("" on success) and the stream.
func verifyLoadArchive(c *check.C, d *Daemon, archive []byte) (string, Response) {
	r := d.Req(c, http.MethodPost, "/v1.50/images/load?quiet=1", bytes.NewReader(archive), "Content-Type", "application/x-tar")
	if r.Status != http.StatusOK {
		if m := r.Message(); m != "" {
			return m, r
		}
		return r.String(), r
	}
	return r.Lines(c).Err(), r
}

// TestLoadRefusesWrongDescriptorSizes: a size in index.json, or in the
// manifest's config or layer descriptor, that is not the blob's. Old code
// never compared them and recorded the image.
func (s *StoreVerifySuite) TestLoadRefusesWrongDescriptorSizes(c *check.C) {
	for _, tc := range []struct {
		what string
		opts ociArchiveOpts
	}{
		{"index.json entry size +1", ociArchiveOpts{indexSizeDelta: 1}},
		{"index.json entry size -1", ociArchiveOpts{indexSizeDelta: -1}},
		{"config descriptor size -1", ociArchiveOpts{configSizeDelta: -1}},
		{"layer descriptor size +100", ociArchiveOpts{layerSizeDelta: 100}},
	} {
		tc.opts.name = "docker.io/verify/sizes:1"
		assertLoadRefused(c, tc.what, buildOCIArchive(c, tc.opts).tar, "size")
	}
	// The same archive with the right sizes loads (the cases differ only
	// in the size).
	d := StartDaemon(c)
	defer d.Kill()
	a := buildOCIArchive(c, ociArchiveOpts{name: "docker.io/verify/sizes:1"})
	msg, r := verifyLoadArchive(c, d, a.tar)
	c.Assert(msg, check.Equals, "", check.Commentf("%s", r))
	c.Assert(imageIDs(c, d), check.DeepEquals, []string{a.config.Digest})
	assertStoreClean(c, d, "after the good load")
}

// assertLoadRefused loads archive into a fresh wharfd: the load fails with
// an error containing word, records nothing and leaves no blob. A load that
// succeeds fails the test and the next case still runs.
func assertLoadRefused(c *check.C, what string, archive []byte, word string) {
	d := StartDaemon(c)
	defer d.Kill()
	msg, r := verifyLoadArchive(c, d, archive)
	if !c.Check(msg, check.Not(check.Equals), "", check.Commentf("%s: load succeeded: %s", what, r)) {
		return
	}
	c.Assert(msg, check.Matches, `(?s).*`+word+`.*`, check.Commentf("%s", what))
	c.Assert(imageIDs(c, d), check.HasLen, 0, check.Commentf("%s: the refused load recorded an image", what))
	assertStoreClean(c, d, what)
	c.Assert(blobsOnDisk(c, d), check.HasLen, 0, check.Commentf("%s: refused load left blobs", what))
}

// storedIndexEntries are the entries of the data-root's index.json for
// manifest digest dg.
func storedIndexEntries(c *check.C, idxJSON []byte, dg string) []ocispec.Descriptor {
	var idx ocispec.Index
	c.Assert(json.Unmarshal(idxJSON, &idx), check.IsNil, check.Commentf("%s", idxJSON))
	var out []ocispec.Descriptor
	for _, m := range idx.Manifests {
		if m.Digest.String() == dg {
			out = append(out, m)
		}
	}
	return out
}

// TestLoadFillsMissingMediaType: an index.json entry without mediaType is
// stored with the manifest's media type: in the data-root's index.json, in
// inspect's Descriptor and in a save. Old code stored "".
func (s *StoreVerifySuite) TestLoadFillsMissingMediaType(c *check.C) {
	d := StartDaemon(c)
	defer d.Kill()
	for _, tc := range []struct {
		what string
		opts ociArchiveOpts
	}{
		{"manifest names its media type", ociArchiveOpts{name: "docker.io/verify/mt:1", noIndexMediaType: true}},
		{"manifest without mediaType (OCI allows it)", ociArchiveOpts{name: "docker.io/verify/mt:2", noIndexMediaType: true, noManifestMediaType: true}},
	} {
		a := buildOCIArchive(c, tc.opts)
		msg, r := verifyLoadArchive(c, d, a.tar)
		c.Assert(msg, check.Equals, "", check.Commentf("%s: %s", tc.what, r))

		// The data-root's index.json is written by a background writer,
		// within a second of a change (graph/store/BOLT.md): wait for it.
		var b []byte
		var entries []ocispec.Descriptor
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var err error
			b, err = os.ReadFile(filepath.Join(d.Root, "index.json"))
			c.Assert(err, check.IsNil)
			if entries = storedIndexEntries(c, b, a.manifest.Digest); len(entries) > 0 || time.Now().After(deadline) {
				break
			}
		}
		c.Assert(entries, check.Not(check.HasLen), 0, check.Commentf("%s: data-root index.json lacks %s: %s", tc.what, a.manifest.Digest, b))
		for _, e := range entries {
			c.Check(e.MediaType, check.Equals, ocispec.MediaTypeImageManifest, check.Commentf("%s: data-root index.json: %s", tc.what, b))
		}

		var insp struct{ Descriptor *ocispec.Descriptor }
		d.Get(c, "/v1.50/images/"+tc.opts.name+"/json").JSON(c, &insp)
		c.Assert(insp.Descriptor, check.NotNil, check.Commentf("%s", tc.what))
		c.Check(insp.Descriptor.MediaType, check.Equals, ocispec.MediaTypeImageManifest, check.Commentf("%s: inspect Descriptor", tc.what))

		sr := d.Get(c, "/v1.50/images/"+tc.opts.name+"/get")
		c.Assert(sr.Status, check.Equals, http.StatusOK, check.Commentf("%s: save: %s", tc.what, sr))
		var saved []byte
		for _, e := range tarEntries(c, sr.Body) {
			if e.name == "index.json" {
				saved = []byte(e.body)
			}
		}
		c.Assert(saved, check.NotNil, check.Commentf("%s: save has no index.json: %v", tc.what, tarNames(c, sr.Body)))
		entries = storedIndexEntries(c, saved, a.manifest.Digest)
		c.Assert(entries, check.Not(check.HasLen), 0, check.Commentf("%s: saved index.json: %s", tc.what, saved))
		for _, e := range entries {
			c.Check(e.MediaType, check.Equals, ocispec.MediaTypeImageManifest, check.Commentf("%s: saved index.json: %s", tc.what, saved))
		}
	}
	assertStoreClean(c, d, "after the loads")
}

// ------------------------------------------------------------ 3. load's CPU

// zeroLayerData is the uncompressed size of a zero layer: 64 MiB of zeros
// that gzip to about 64 KiB.
const zeroLayerData = 64 << 20

// zeroLayers builds gzip tar layers of 64 MiB of zeros, each different by a
// few bytes at its end, cheaply: the shared 64 MiB head is compressed and
// hashed once; layer i is that gzip member followed by a small one holding
// its own tail (a gzip stream may have several members), and its diff ID is
// the saved SHA-256 state of the head continued over the tail.
var zeroLayers struct {
	once  sync.Once
	head  []byte // gzip member: tar header of "zeros" + its 64 MiB
	state []byte // SHA-256 state after the uncompressed head
	err   error
}

func zeroLayer(c *check.C, i int) rawLayer {
	zeroLayers.once.Do(func() {
		hdr, err := tarHeader("zeros", zeroLayerData)
		if err != nil {
			zeroLayers.err = err
			return
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		h := sha256.New()
		w := io.MultiWriter(zw, h)
		_, _ = w.Write(hdr)
		zeros := make([]byte, 1<<20)
		for n := 0; n < zeroLayerData; n += len(zeros) {
			_, _ = w.Write(zeros)
		}
		if err := zw.Close(); err != nil {
			zeroLayers.err = err
			return
		}
		zeroLayers.head = gz.Bytes()
		zeroLayers.state, zeroLayers.err = h.(encoding.BinaryMarshaler).MarshalBinary()
	})
	c.Assert(zeroLayers.err, check.IsNil)
	tail := makeTar(c, []tarEntry{{name: fmt.Sprintf("layer-%04d", i), body: fmt.Sprintf("layer %d\n", i)}})
	h := sha256.New()
	c.Assert(h.(encoding.BinaryUnmarshaler).UnmarshalBinary(zeroLayers.state), check.IsNil)
	h.Write(tail)
	data := append(append([]byte{}, zeroLayers.head...), gzipOf(c, tail)...)
	return rawLayer{
		blob:   testregistry.NewBlob(testregistry.MediaTypeDockerLayer, data),
		diffID: "sha256:" + hex.EncodeToString(h.Sum(nil)),
	}
}

// tarHeader is the tar header block of a regular file of size bytes
// (the caller writes its content).
func tarHeader(name string, size int64) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0), Format: tar.FormatUSTAR})
	return buf.Bytes(), err
}

// dockerArchive is a docker-save archive (docker 25+ shape: manifest.json
// naming blobs/sha256/…) of one image whose manifest.json lists layers by
// path — the same path any number of times.
func dockerArchive(c *check.C, tag string, layers []rawLayer, order []int) []byte {
	var diffIDs, paths []string
	entries := []tarEntry{}
	seen := map[string]bool{}
	for _, i := range order {
		l := layers[i]
		p := "blobs/sha256/" + strings.TrimPrefix(l.blob.Digest, "sha256:")
		diffIDs = append(diffIDs, l.diffID)
		paths = append(paths, p)
		if !seen[p] {
			seen[p] = true
			entries = append(entries, tarEntry{name: p, body: string(l.blob.Data)})
		}
	}
	cfg := imageConfig(c, diffIDs, testregistry.MediaTypeDockerConfig)
	cfgPath := "blobs/sha256/" + strings.TrimPrefix(cfg.Digest, "sha256:")
	mj, err := json.Marshal([]map[string]any{{"Config": cfgPath, "RepoTags": []string{tag}, "Layers": paths}})
	c.Assert(err, check.IsNil)
	head := []tarEntry{{name: "manifest.json", body: string(mj)}, {name: cfgPath, body: string(cfg.Data)}}
	return makeTar(c, append(head, entries...))
}

// cpuTicks is wharfd's user+system CPU time so far, in clock ticks
// (1/100 s on Linux), from /proc/PID/stat.
func cpuTicks(c *check.C, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	c.Assert(err, check.IsNil)
	s := string(b)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+1:])
	// fields[0] is field 3 (state): utime is field 14, stime field 15.
	ut, err1 := strconv.ParseInt(fields[11], 10, 64)
	st, err2 := strconv.ParseInt(fields[12], 10, 64)
	c.Assert(err1, check.IsNil)
	c.Assert(err2, check.IsNil)
	return ut + st
}

const ticksPerSecond = 100

func ticksString(t int64) string { return fmt.Sprintf("%.2f s", float64(t)/ticksPerSecond) }

// timedLoad POSTs archive to /images/load with a deadline and returns the
// CPU wharfd spent on it, the client's error ("" on success) and whether
// it finished before the deadline.
func timedLoad(c *check.C, d *Daemon, archive []byte, deadline time.Duration) (cpu int64, msg string, done bool) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	before := cpuTicks(c, d.pid())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://wharfd/v1.50/images/load?quiet=1", bytes.NewReader(archive))
	c.Assert(err, check.IsNil)
	req.Header.Set("Content-Type", "application/x-tar")
	hc := d.HTTPClient()
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err == nil {
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		err = rerr
		r := Response{Status: resp.StatusCode, Body: body}
		switch {
		case err != nil:
		case r.Status != http.StatusOK:
			msg = r.Message()
			if msg == "" {
				msg = r.String()
			}
		default:
			msg = r.Lines(c).Err()
		}
	}
	cpu = cpuTicks(c, d.pid()) - before
	if ctx.Err() != nil {
		return cpu, "", false
	}
	c.Assert(err, check.IsNil)
	return cpu, msg, true
}

// TestLoadRepeatedLayerHashedOnce: a 64 KiB gzip layer (64 MiB of zeros)
// listed once by one archive, then another such layer listed 400 times by
// one archive of about 130 KB. The second
// load may succeed or be refused, but its CPU cost must not grow with the
// count (old code decompressed and hashed the layer 400 times: ~400×).
func (s *StoreVerifySuite) TestLoadRepeatedLayerHashedOnce(c *check.C) {
	d := StartDaemon(c)
	defer d.Kill()
	// Two layers of the same shape, so the second load cannot reuse what
	// the first one learnt about its layer.
	layers := []rawLayer{zeroLayer(c, 0), zeroLayer(c, 1)}

	one := dockerArchive(c, "verify/amp:1", layers, []int{0})
	cpu1, msg, done := timedLoad(c, d, one, 30*time.Second)
	c.Assert(done, check.Equals, true, check.Commentf("the load of one 64 MiB layer took over 30 s"))
	c.Assert(msg, check.Equals, "", check.Commentf("load of the one-layer archive"))
	c.Assert(imageIDs(c, d), check.HasLen, 1)

	order := make([]int, 400)
	for i := range order {
		order[i] = 1
	}
	many := dockerArchive(c, "verify/amp:400", layers, order)
	c.Logf("archive with the layer listed 400 times: %d bytes", len(many))
	const deadline = 10 * time.Second
	cpu400, msg, done := timedLoad(c, d, many, deadline)
	c.Logf("wharfd CPU: layer listed once %s, 400 times %s (finished: %v, error: %q)", ticksString(cpu1), ticksString(cpu400), done, msg)
	budget := 3*cpu1 + ticksPerSecond/2
	c.Assert(done, check.Equals, true, check.Commentf("the load of the 400× archive was still running after %s, having used %s of CPU (once: %s)",
		deadline, ticksString(cpu400), ticksString(cpu1)))
	c.Assert(cpu400 <= budget, check.Equals, true, check.Commentf("the 400× archive cost %s of CPU, the 1× archive %s: budget 3× + 0.5 s = %s",
		ticksString(cpu400), ticksString(cpu1), ticksString(budget)))
	d.ping(c)
	assertStoreClean(c, d, "after the 400× load")
}

// TestLoadStopsWhenClientLeaves: an archive of 200 distinct 64 KiB gzip
// layers of 64 MiB of zeros each (13 MB that take ~10 s of CPU to
// decompress and hash) is sent whole; once wharfd is busy with it (its CPU
// time has grown by 0.3 s since the last byte was written) the client closes
// the connection, before any answer. wharfd's CPU time must stop growing
// within 5 s (old code worked on for the whole archive), it keeps serving,
// and records nothing.
func (s *StoreVerifySuite) TestLoadStopsWhenClientLeaves(c *check.C) {
	d := StartDaemon(c)
	defer d.Kill()
	const n = 200
	var layers []rawLayer
	order := make([]int, n)
	for i := 0; i < n; i++ {
		layers = append(layers, zeroLayer(c, i+2))
		order[i] = i
	}
	archive := dockerArchive(c, "verify/cancel:1", layers, order)
	c.Logf("archive: %d layers, %d bytes", n, len(archive))

	conn, err := net.Dial("unix", d.Sock)
	c.Assert(err, check.IsNil)
	defer conn.Close()
	c.Assert(conn.SetWriteDeadline(time.Now().Add(time.Minute)), check.IsNil)
	start := cpuTicks(c, d.pid())
	_, err = fmt.Fprintf(conn, "POST /v1.50/images/load?quiet=1 HTTP/1.1\r\nHost: wharfd\r\nContent-Type: application/x-tar\r\nContent-Length: %d\r\n\r\n", len(archive))
	c.Assert(err, check.IsNil)
	_, err = conn.Write(archive)
	c.Assert(err, check.IsNil)
	sent := cpuTicks(c, d.pid())

	// Leave once wharfd is working on the archive: closing while it still
	// reads the last entries would only test that a truncated archive is
	// refused.
	const busyTicks = 30
	busy := waitFor(5*time.Second, func() bool { return cpuTicks(c, d.pid())-sent >= busyTicks })
	// An answer already there would mean the load ended before the client
	// left: the archive is too small to test anything.
	c.Assert(conn.SetReadDeadline(time.Now().Add(time.Millisecond)), check.IsNil)
	early, _ := conn.Read(make([]byte, 1))
	c.Assert(early, check.Equals, 0, check.Commentf("wharfd answered before the client left: the load is not long enough to test"))
	atClose := cpuTicks(c, d.pid())
	c.Assert(conn.Close(), check.IsNil)
	closed := time.Now()
	c.Logf("wharfd CPU: %s while receiving, %s more before the client left (busy: %v)", ticksString(sent-start), ticksString(atClose-sent), busy)

	// Poll: two samples 250 ms apart that are equal mean wharfd is idle.
	const idleWithin = 5 * time.Second
	prev := atClose
	idle := false
	for time.Since(closed) < idleWithin {
		time.Sleep(250 * time.Millisecond)
		now := cpuTicks(c, d.pid())
		if now == prev {
			idle = true
			break
		}
		prev = now
	}
	after := cpuTicks(c, d.pid())
	c.Logf("wharfd CPU: %s after the client left (%s later, idle: %v)",
		ticksString(after-atClose), time.Since(closed).Round(time.Millisecond), idle)
	c.Assert(idle, check.Equals, true, check.Commentf("wharfd was still using CPU %s after the client left: %s since then",
		idleWithin, ticksString(after-atClose)))

	d.ping(c)
	c.Assert(imageIDs(c, d), check.HasLen, 0, check.Commentf("the abandoned load recorded an image"))
	var left []string
	reclaimed := waitFor(5*time.Second, func() bool {
		left = blobsOnDisk(c, d)
		return len(left) == 0
	})
	c.Assert(reclaimed, check.Equals, true, check.Commentf("the abandoned load left %d blobs", len(left)))
	assertStoreClean(c, d, "after the abandoned load")
}
