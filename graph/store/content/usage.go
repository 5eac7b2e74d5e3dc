package content

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/internal/ocilayout"
)

// Usage counts the blobs under blobs/ and their bytes as they are on
// disk now: every regular file named by a digest, whether a record uses it
// or not (the store check tells those apart). It takes no store lock: a
// blob appears and disappears by rename, so a listing sees each whole or
// not at all, and one removed between the listing and its stat is skipped.
// For the metrics scrape.
func (s *Store) Usage() (blobs int, bytes int64, err error) {
	for _, alg := range []digest.Algorithm{digest.SHA256, digest.SHA512} {
		n, b, err := dirUsage(filepath.Join(s.root, ocilayout.BlobsDir, string(alg)), alg)
		if err != nil {
			return 0, 0, err
		}
		blobs, bytes = blobs+n, bytes+b
	}
	return blobs, bytes, nil
}

// usageBatch is how many directory entries Usage holds at a time: a
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

// TightenModes makes root 0700 and everything under it 0700 (directories)
// or 0600 (files). Stores written by earlier versions were 0755/0644. The
// root's own mode is changed last, so a store whose root is already 0700 was
// tightened whole and start-up does not walk it again.
func TightenModes(root string) error {
	fi, err := os.Stat(root)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() == DirMode {
		return nil
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		mode := FileMode
		if d.IsDir() {
			mode = DirMode
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		return err
	}
	return os.Chmod(root, DirMode)
}
