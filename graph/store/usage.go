package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"
)

// BlobUsage counts the blobs under blobs/ and their bytes as they are on
// disk now (content.Usage): every regular file named by a digest, whether a
// record uses it or not. For the metrics scrape.
func (s *Store) BlobUsage() (blobs int, bytes int64, err error) { return s.blobs.Usage() }

// SharedBlob reports whether more than one image keeps the blob d alive
// (the blobs bucket: at most two keys read, whatever the store's size).
// `system df` counts an image's shared layers with it.
func (s *Store) SharedBlob(d digest.Digest) bool {
	shared := false
	_ = s.db.View(func(btx *bolt.Tx) error {
		p := pairPrefix(d)
		c := btx.Bucket(bucketBlobs).Cursor()
		n := 0
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p) && n < 2; k, _ = c.Next() {
			n++
		}
		shared = n > 1
		return nil
	})
	return shared
}

// ManifestLayers reads the layers of the stored manifest d without adding
// it to the metadata cache (`system df` reads every image's once).
func (s *Store) ManifestLayers(d digest.Digest) ([]ocispec.Descriptor, error) {
	b, err := s.ReadBlob(d, MaxManifestSize)
	if err != nil {
		return nil, err
	}
	var m struct{ Layers []ocispec.Descriptor }
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parse manifest %s: %w", d, err)
	}
	return m.Layers, nil
}
