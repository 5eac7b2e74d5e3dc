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

// Lookup finds a local image by name, name:tag, name@digest, ID or unique
// short ID, as dockerd does (record.Lookup). The record returned is a copy.
func (s *Store) Lookup(name string) (*ImageRecord, error) {
	var r *ImageRecord
	err := s.db.View(func(btx *bolt.Tx) error {
		var err error
		r, err = record.Lookup(lookupView{dbView{btx}}, name)
		return err
	})
	return r, err
}

// NoSuchImage is dockerd's not-found error for name (record.NoSuchImage).
func NoSuchImage(name string) error { return record.NoSuchImage(name) }

// recView is what a lookup reads: the committed records (dbView) or a
// change's view of them (Txn).
type recView interface {
	image(id digest.Digest) (*ImageRecord, error)
	refTarget(ref string) (digest.Digest, bool)
	byTarget(d digest.Digest) []digest.Digest
	shortIDs(prefix string, max int, skip func(digest.Digest) bool) []digest.Digest
}

// lookupView is a recView as record.Lookup reads it.
type lookupView struct{ v recView }

func (l lookupView) Image(id digest.Digest) (*ImageRecord, error) { return l.v.image(id) }
func (l lookupView) RefTarget(ref string) (digest.Digest, bool)   { return l.v.refTarget(ref) }
func (l lookupView) ByTarget(d digest.Digest) []digest.Digest     { return l.v.byTarget(d) }
func (l lookupView) ShortIDs(prefix string, max int) []digest.Digest {
	return l.v.shortIDs(prefix, max, nil)
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
