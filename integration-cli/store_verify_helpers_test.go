package integration

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// StoreVerifySuite's machinery: what is on disk and referenced, the images
// it pushes and the refusals it asserts.

// verifyCheckReport is `wharf system check --json` with the orphan counts.
type verifyCheckReport struct {
	Full              bool
	Images            int
	Blobs             int
	UnreferencedBlobs int
	UnreferencedBytes int64
	Problems          []struct{ Kind, Image, Object, Message string }
}

// blobsOnDisk lists the digests under the data-root's blobs/sha256.
func blobsOnDisk(c *check.C, d *Daemon) []string {
	var out []string
	for _, n := range dirNames(c, filepath.Join(d.Root, "blobs", "sha256")) {
		out = append(out, "sha256:"+n)
	}
	return out
}

// readStoredBlob reads a blob of d's store ("" when it is not there).
func readStoredBlob(d *Daemon, dg string) []byte {
	b, err := os.ReadFile(filepath.Join(d.Root, "blobs", "sha256", strings.TrimPrefix(dg, "sha256:")))
	if err != nil {
		return nil
	}
	return b
}

// referencedBlobs computes, independently of wharf's own bookkeeping, the
// blobs the listed images use: each image's target (inspect's Descriptor),
// and from it the stored platform manifests, their configs and layers.
func referencedBlobs(c *check.C, d *Daemon) []string {
	var list []struct{ ID string }
	r := d.oneShot(c, http.MethodGet, "/v1.50/images/json?all=1")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	r.JSON(c, &list)
	used := map[string]bool{}
	var walk func(dg string)
	walk = func(dg string) {
		if used[dg] {
			return
		}
		used[dg] = true
		var doc struct {
			Manifests []ocispec.Descriptor `json:"manifests"`
			Config    *ocispec.Descriptor  `json:"config"`
			Layers    []ocispec.Descriptor `json:"layers"`
		}
		b := readStoredBlob(d, dg)
		c.Assert(b, check.NotNil, check.Commentf("blob %s used by an image is missing", dg))
		c.Assert(json.Unmarshal(b, &doc), check.IsNil, check.Commentf("manifest %s", dg))
		for _, m := range doc.Manifests {
			if readStoredBlob(d, m.Digest.String()) != nil {
				walk(m.Digest.String())
			}
		}
		if doc.Config != nil {
			used[doc.Config.Digest.String()] = true
			for _, l := range doc.Layers {
				used[l.Digest.String()] = true
			}
		}
	}
	for _, im := range list {
		var insp struct {
			Descriptor *ocispec.Descriptor
		}
		ir := d.oneShot(c, http.MethodGet, "/v1.50/images/"+im.ID+"/json")
		c.Assert(ir.Status, check.Equals, http.StatusOK, check.Commentf("listed image %s: %s", im.ID, ir))
		ir.JSON(c, &insp)
		c.Assert(insp.Descriptor, check.NotNil, check.Commentf("inspect %s has no Descriptor", im.ID))
		walk(insp.Descriptor.Digest.String())
	}
	var out []string
	for k := range used {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// storeCheck runs `wharf system check --json`.
func verifyStoreCheck(c *check.C, d *Daemon) (verifyCheckReport, Result) {
	r := d.Wharf(c, "system", "check", "--json")
	var rep verifyCheckReport
	c.Assert(json.Unmarshal([]byte(r.Stdout), &rep), check.IsNil, check.Commentf("%s", r))
	return rep, r
}

// assertStoreClean: the store check passes with no problem and no
// orphan, and blobs/ holds exactly the blobs the listed images use.
func assertStoreClean(c *check.C, d *Daemon, what string) {
	rep, r := verifyStoreCheck(c, d)
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s: store check\n%s", what, r))
	c.Assert(rep.Problems, check.HasLen, 0, check.Commentf("%s: store check problems\n%s", what, r))
	c.Assert(rep.UnreferencedBlobs, check.Equals, 0, check.Commentf("%s: %s", what, r))
	c.Assert(rep.UnreferencedBytes, check.Equals, int64(0), check.Commentf("%s: %s", what, r))
	c.Assert(blobsOnDisk(c, d), check.DeepEquals, referencedBlobs(c, d),
		check.Commentf("%s: blobs/sha256 holds blobs that no image uses (orphans)", what))
}

// imageIDs lists the images of d.
func imageIDs(c *check.C, d *Daemon) []string {
	var list []struct{ ID string }
	r := d.oneShot(c, http.MethodGet, "/v1.50/images/json?all=1")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	r.JSON(c, &list)
	ids := []string{}
	for _, im := range list {
		ids = append(ids, im.ID)
	}
	return ids
}

// ------------------------------------------------------------ image fixtures

// rawLayer is one layer blob with its uncompressed digest.
type rawLayer struct {
	blob   testregistry.Blob
	diffID string
}

// tarLayer is a small random tar layer, gzip-compressed unless mediaType
// is an uncompressed one.
func tarLayer(c *check.C, name, mediaType string) rawLayer {
	raw, err := testregistry.RandomTar(name, 300)
	c.Assert(err, check.IsNil)
	diffID := digest.FromBytes(raw).String()
	if mediaType == verifyDockerTarLayer || mediaType == verifyOCITarLayer {
		return rawLayer{blob: testregistry.NewBlob(mediaType, raw), diffID: diffID}
	}
	return rawLayer{blob: testregistry.NewBlob(mediaType, gzipOf(c, raw)), diffID: diffID}
}

func gzipOf(c *check.C, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	c.Assert(err, check.IsNil)
	c.Assert(zw.Close(), check.IsNil)
	return buf.Bytes()
}

// imageConfig is a minimal linux/amd64 config with these diff_ids.
func imageConfig(c *check.C, diffIDs []string, mediaType string) testregistry.Blob {
	cfg := map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      "2025-03-14T15:09:26Z",
		"config":       map[string]any{"Cmd": []string{"/bin/sh"}, "WorkingDir": "/"},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
	}
	b, err := json.Marshal(cfg)
	c.Assert(err, check.IsNil)
	return testregistry.NewBlob(mediaType, b)
}

// registryImage assembles a Docker schema2 (docker) or OCI image manifest.
func registryImage(c *check.C, docker bool, cfg testregistry.Blob, layers []rawLayer) *testregistry.Image {
	mt := testregistry.MediaTypeOCIManifest
	if docker {
		mt = testregistry.MediaTypeDockerManifest
	}
	m := map[string]any{"schemaVersion": 2, "mediaType": mt, "config": cfg.Descriptor()}
	var descs []ocispec.Descriptor
	img := &testregistry.Image{Config: cfg}
	for _, l := range layers {
		descs = append(descs, l.blob.Descriptor())
		img.Layers = append(img.Layers, l.blob)
		img.DiffIDs = append(img.DiffIDs, l.diffID)
	}
	m["layers"] = descs
	b, err := json.Marshal(m)
	c.Assert(err, check.IsNil)
	img.Manifest = testregistry.NewBlob(mt, b)
	return img
}

func (s *StoreVerifySuite) push(c *check.C, repo, tag string, img *testregistry.Image) string {
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, repo, tag, img), check.IsNil)
	return s.reg.Host + "/" + repo + ":" + tag
}

// ------------------------------------------------------------------- 1. pull

// assertPullRefused: `wharf pull ref` into a fresh wharfd fails naming the
// diff ID, records nothing, and leaves blobs/ as the images need it (here:
// empty). A pull that succeeds fails the test and the next case still runs.
func assertPullRefused(c *check.C, ref string) {
	d := StartDaemon(c)
	defer d.Kill()
	r := d.Wharf(c, "pull", ref)
	if !c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("pull of an image whose diff_ids do not match its layers succeeded:\n%s", r)) {
		return
	}
	c.Assert(r.Stdout+r.Stderr, check.Matches, `(?s).*diff ID.*`, check.Commentf("%s", r))
	c.Assert(imageIDs(c, d), check.HasLen, 0, check.Commentf("refused pull of %s recorded an image", ref))
	c.Assert(d.oneShot(c, http.MethodGet, "/v1.50/images/"+ref+"/json").Status, check.Equals, http.StatusNotFound)
	assertStoreClean(c, d, "after the refused pull of "+ref)
	c.Assert(blobsOnDisk(c, d), check.HasLen, 0, check.Commentf("refused pull of %s left blobs", ref))
}
