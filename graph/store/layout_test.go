package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestDataRootIsReadableOCILayout reads the data-root with
// go-containerregistry's layout package: an independent OCI reader must see
// every image, its manifest, config and layers, with verified digests.
func TestDataRootIsReadableOCILayout(t *testing.T) {
	s := newTestStore(t)
	a := putTestImage(t, s, testImage{tags: []string{"example.com/a:1"}, layers: []string{"a"}, labels: map[string]string{"x": "1"}}).ID
	b := putTagged(t, s, "", "b").ID
	wantIDs := map[string]bool{a.String(): true, b.String(): true}
	// index.json is written by a background writer and on Close: a closed
	// data-root is a complete layout.
	must(t, s.Close())

	p, err := layout.FromPath(s.root)
	if err != nil {
		t.Fatalf("layout.FromPath: %v", err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("index.json has %d entries, want 2", len(im.Manifests))
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatalf("Image(%s): %v", d.Digest, err)
		}
		cn, err := img.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		if !wantIDs[cn.String()] {
			t.Fatalf("unexpected config %s", cn)
		}
		if cn.String() == a.String() {
			if d.Annotations[ocispec.AnnotationRefName] != "1" || d.Annotations[AnnImageName] != "example.com/a:1" {
				t.Fatalf("annotations = %v", d.Annotations)
			}
			cf, err := img.ConfigFile()
			if err != nil || cf.Config.Labels["x"] != "1" {
				t.Fatalf("config: %v %v", cf, err)
			}
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("layers: %v %v", layers, err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		rc.Close()
		diffID, _ := layers[0].DiffID()
		cf, _ := img.ConfigFile()
		if cf.RootFS.DiffIDs[0] != diffID {
			t.Fatalf("diff id %s != config %s", diffID, cf.RootFS.DiffIDs[0])
		}
		// The compressed bytes hash to the layer digest.
		crc, err := layers[0].Compressed()
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		io.Copy(h, crc)
		crc.Close()
		ld, _ := layers[0].Digest()
		if hex.EncodeToString(h.Sum(nil)) != ld.Hex {
			t.Fatalf("layer %s content does not match its digest", ld)
		}
		mb, _ := img.RawManifest()
		md, _ := img.Digest()
		if sum := sha256.Sum256(mb); hex.EncodeToString(sum[:]) != md.Hex || md.String() != d.Digest.String() {
			t.Fatalf("manifest digest mismatch")
		}
	}
	var raw ocispec.Index
	b2, _ := os.ReadFile(filepath.Join(s.root, "index.json"))
	if err := json.Unmarshal(b2, &raw); err != nil || raw.SchemaVersion != 2 {
		t.Fatalf("index.json: %s %v", b2, err)
	}
}
