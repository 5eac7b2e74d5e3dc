package store

import (
	"bytes"
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/graph/store/record"
)

// The records' types (graph/store/record), by the store's names.
type (
	ImageRecord   = record.Image
	PlatformImage = record.Platform
	Summary       = record.Summary
	ImageConfig   = record.ImageConfig
)

// ParseNewTag validates repo and tag as dockerd does and returns the fully
// qualified name:tag (record.ParseNewTag).
func ParseNewTag(repo, tag string) (reference.NamedTagged, error) {
	return record.ParseNewTag(repo, tag)
}

// CheckNewTag is the store's own rule for a tag it is asked to create
// (record.CheckNewTag).
func CheckNewTag(ref reference.NamedTagged) error { return record.CheckNewTag(ref) }

// Familiar is ref (fully qualified) in its familiar form.
func Familiar(ref string) string { return record.Familiar(ref) }

// FamiliarRefs converts fully qualified references to their familiar form.
func FamiliarRefs(refs []string) []string { return record.FamiliarRefs(refs) }

// NormaliseRefs parses refs and returns their fully qualified strings
// (record.NormaliseRefs).
func NormaliseRefs(refs []string, canonical bool) ([]string, error) {
	return record.NormaliseRefs(refs, canonical)
}

// ParseImageConfig parses an image config.
func ParseImageConfig(b []byte) (*ImageConfig, error) { return record.ParseImageConfig(b) }

// ImagesByRepository returns the images tagged in repository (fully
// qualified name) with their tags, for push: a cursor over the references
// of that name.
func (s *Store) ImagesByRepository(repo string) (map[string]*ImageRecord, error) {
	named, err := reference.ParseNormalizedNamed(repo)
	if err != nil {
		return nil, fmt.Errorf("%v%.0w", err, errdefs.ErrInvalidArgument)
	}
	name := named.Name()
	out := map[string]*ImageRecord{}
	err = s.db.View(func(btx *bolt.Tx) error {
		v := dbView{btx}
		p := []byte(name + ":")
		c := btx.Bucket(bucketRefs).Cursor()
		for k, id := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, id = c.Next() {
			n, err := reference.ParseNormalizedNamed(string(k))
			if err != nil {
				continue
			}
			nt, ok := n.(reference.NamedTagged)
			if !ok || n.Name() != name {
				continue
			}
			r, err := v.image(digest.Digest(id))
			if err != nil {
				return err
			}
			if r != nil {
				out[nt.Tag()] = r
			}
		}
		return nil
	})
	return out, err
}

// Count returns the number of images (for /info).
func (s *Store) Count() int { return int(s.count.Load()) }

// Snapshot reads every record (a copy, read in one transaction) so
// callers can read blobs without a lock.
func (s *Store) Snapshot() []*ImageRecord {
	var out []*ImageRecord
	err := s.db.View(func(btx *bolt.Tx) error {
		return dbView{btx}.forEachImage(func(r *ImageRecord) error {
			s.scanned(btx, 1024)
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		s.log.WithError(err).Warn("read image records")
	}
	return out
}
