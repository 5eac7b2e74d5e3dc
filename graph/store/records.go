package store

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/api/types"
)

// ImageRecord is one local image: what the tag store and RepoDigests point at.
type ImageRecord struct {
	// ID is the image ID: the config digest.
	ID digest.Digest
	// Target is the top-level descriptor as pulled or loaded (an index for a
	// multi-platform pull); RepoDigests pin it.
	Target ocispec.Descriptor
	// Manifest is the platform manifest whose config is ID.
	Manifest ocispec.Descriptor
	// Platforms are the platforms of the index Target held locally, in
	// the index's order (platforms.go); ID and Manifest are one of them.
	// Empty for an image whose target is a manifest, and for a record
	// written before records held platforms (Present: the one platform, Manifest).
	Platforms []PlatformImage `json:",omitempty"`
	// RepoTags are fully qualified references (docker.io/library/busybox:latest);
	// shown in familiar form on the API.
	RepoTags []string
	// RepoDigests are fully qualified name@digest references.
	RepoDigests []string
	LastTagTime time.Time
	Created     time.Time
	// Trust is the signature policy's verdict the image was pulled under;
	// nil when no policy applied.
	Trust *types.Trust `json:",omitempty"`
}

// Clone is a deep copy of r.
func (r *ImageRecord) Clone() *ImageRecord {
	c := *r
	c.RepoTags = append([]string{}, r.RepoTags...)
	c.RepoDigests = append([]string{}, r.RepoDigests...)
	if r.Platforms != nil {
		c.Platforms = slices.Clone(r.Platforms)
	}
	return &c
}

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
