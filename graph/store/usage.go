package store

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
)

// BlobUsage counts the blobs under blobs/ and their bytes as they are on
// disk now: every regular file named by a digest, whether a record uses it
// or not (the store check tells those apart). It takes no store lock: a
// blob appears and disappears by rename, so a listing sees each whole or
// not at all, and one removed between the listing and its stat is skipped.
// For the metrics scrape.
func (s *Store) BlobUsage() (blobs int, bytes int64, err error) {
	for _, alg := range []digest.Algorithm{digest.SHA256, digest.SHA512} {
		ents, err := os.ReadDir(filepath.Join(s.root, BlobsDir, string(alg)))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, 0, err
		}
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
	}
	return blobs, bytes, nil
}
