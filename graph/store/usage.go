package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"
)

// BlobUsage counts the blobs under blobs/ and their bytes as they are on
// disk now: every regular file named by a digest, whether a record uses it
// or not (the store check tells those apart). It takes no store lock: a
// blob appears and disappears by rename, so a listing sees each whole or
// not at all, and one removed between the listing and its stat is skipped.
// For the metrics scrape.
func (s *Store) BlobUsage() (blobs int, bytes int64, err error) {
	for _, alg := range []digest.Algorithm{digest.SHA256, digest.SHA512} {
		n, b, err := dirUsage(filepath.Join(s.root, BlobsDir, string(alg)), alg)
		if err != nil {
			return 0, 0, err
		}
		blobs, bytes = blobs+n, bytes+b
	}
	return blobs, bytes, nil
}

// usageBatch is how many directory entries BlobUsage holds at a time: a
// whole listing of 150,000 blobs (50,000 images) is ~20 MiB of entries
// and names, taken at every scrape; 512 is a few dozen KiB.
const usageBatch = 512

// dirUsage counts the blobs of algorithm alg in dir and their bytes,
// reading the directory usageBatch entries at a time.
func dirUsage(dir string, alg digest.Algorithm) (blobs int, bytes int64, err error) {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	for {
		ents, err := f.ReadDir(usageBatch)
		for _, e := range ents {
			if !e.Type().IsRegular() || ValidateDigest(digest.NewDigestFromEncoded(alg, e.Name())) != nil {
				continue
			}
			fi, err := e.Info()
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return 0, 0, err
			}
			blobs++
			bytes += fi.Size()
		}
		if errors.Is(err, io.EOF) {
			return blobs, bytes, nil
		}
		if err != nil {
			return 0, 0, err
		}
	}
}

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
