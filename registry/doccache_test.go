package registry

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func docManifest(t *testing.T, layers int) []byte {
	t.Helper()
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
		Config: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromString("c"), Size: 1}}
	m.SchemaVersion = 2
	for i := 0; i < layers; i++ {
		m.Layers = append(m.Layers, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromBytes([]byte{byte(i)}), Size: 1})
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The decoded form is reused only for the cache's own verified bytes of a
// digest: another slice under the same digest (a copy, or bytes that lie
// about their digest) is decoded as it is.
func TestDecodedManifestKeptOnlyForTheCachesOwnBytes(t *testing.T) {
	c := newContentCache(1 << 20)
	body := docManifest(t, 3)
	d := digest.FromBytes(body)
	c.put(d, ocispec.MediaTypeImageManifest, body, "reg/a|anon")

	doc, err := c.decode("reg", d, ocispec.MediaTypeImageManifest, body)
	if err != nil || len(doc.manifest.Layers) != 3 {
		t.Fatalf("decode = %v, %v", doc, err)
	}
	if c.decodedOf(d, ocispec.MediaTypeImageManifest, body) == nil {
		t.Fatal("decoded form not kept for the cached bytes")
	}
	if c.decodedOf(d, ocispec.MediaTypeImageManifest, bytes.Clone(body)) != nil {
		t.Fatal("decoded form answered a slice that is not the cache's")
	}
	liar := docManifest(t, 5) // claims d, is not d's bytes
	doc, err = c.decode("reg", d, ocispec.MediaTypeImageManifest, liar)
	if err != nil || len(doc.manifest.Layers) != 5 {
		t.Fatalf("other bytes under d decoded as %d layers (%v), want their own 5", len(doc.manifest.Layers), err)
	}
	if c.decodedOf(d, "", body) != nil {
		t.Fatal("a form decoded as one media type answered another")
	}
}

// A caller changing what it got does not change what the next caller gets.
func TestDecodedManifestCopiesAreTheCallers(t *testing.T) {
	c := newContentCache(1 << 20)
	body := docManifest(t, 2)
	d := digest.FromBytes(body)
	c.put(d, ocispec.MediaTypeImageManifest, body, "reg/a|anon")
	first, err := c.decode("reg", d, ocispec.MediaTypeImageManifest, body)
	if err != nil {
		t.Fatal(err)
	}
	first.manifest.Layers[0].Digest = "sha256:changed"
	first.manifest.Layers = append(first.manifest.Layers, ocispec.Descriptor{})
	second, err := c.decode("reg", d, ocispec.MediaTypeImageManifest, body)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.manifest.Layers) != 2 || second.manifest.Layers[0].Digest != digest.FromBytes([]byte{0}) {
		t.Fatalf("kept form changed by a caller: %v", second.manifest.Layers)
	}
}

// Decoding grants nothing: the bytes still answer only the scope that read
// them, and a refused document is neither kept nor made acceptable.
func TestDecodedManifestKeepsScopeRules(t *testing.T) {
	c := newContentCache(1 << 20)
	body := docManifest(t, 1)
	d := digest.FromBytes(body)
	c.put(d, ocispec.MediaTypeImageManifest, body, "reg/private|alice")
	if _, err := c.decode("reg", d, ocispec.MediaTypeImageManifest, body); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, authorized := c.get(d, "reg/other|anon"); !ok || authorized {
		t.Fatalf("after decode, another scope: ok=%v authorized=%v, want true false", ok, authorized)
	}
	if _, err := c.decode("reg", d, ocispec.MediaTypeImageIndex, body); err == nil {
		t.Fatal("manifest decoded as an index")
	}
	if c.decodedOf(d, ocispec.MediaTypeImageIndex, body) != nil {
		t.Fatal("refused decode kept")
	}
}

// Decoded forms count against the cache's bound and leave with their entry.
func TestDecodedManifestChargedAndEvicted(t *testing.T) {
	body := docManifest(t, 1)
	c := newContentCache(4 * len(body))
	d := digest.FromBytes(body)
	c.put(d, ocispec.MediaTypeImageManifest, body, "s")
	if _, err := c.decode("reg", d, ocispec.MediaTypeImageManifest, body); err != nil {
		t.Fatal(err)
	}
	if c.size != 2*len(body) {
		t.Fatalf("size %d, want %d (bytes and decoded form)", c.size, 2*len(body))
	}
	for i := 0; i < 4; i++ { // as large as body: the fourth pushes d out
		other := bytes.Repeat([]byte{byte('a' + i)}, len(body))
		c.put(digest.FromBytes(other), ocispec.MediaTypeImageConfig, other, "s")
	}
	if _, ok := c.index[d]; ok {
		t.Fatal("oldest entry not evicted")
	}
	sum := 0
	for e := c.lru.Front(); e != nil; e = e.Next() {
		ce := e.Value.(*cacheEntry)
		sum += len(ce.data) + ce.docBytes
	}
	if c.size != sum || c.size > c.max {
		t.Fatalf("size %d, entries hold %d, max %d", c.size, sum, c.max)
	}
}
