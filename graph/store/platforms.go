package store

import (
	"slices"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/store/record"
)

// PlatformOf is p's platform, read from its config when the index entry
// did not say (a record of an older store, a single manifest).
func (s *Store) PlatformOf(r *ImageRecord, p PlatformImage) ocispec.Platform {
	if p.Platform.OS != "" || p.Platform.Architecture != "" {
		return p.Platform
	}
	if m, err := s.Meta(r.View(p)); err == nil {
		c := m.Config.Platform
		return ocispec.Platform{OS: c.OS, Architecture: c.Architecture, Variant: c.Variant, OSVersion: c.OSVersion}
	}
	return ocispec.Platform{}
}

// ErrPlatformNotPresent is wrapped (with errdefs.ErrNotFound) when an image
// does not hold the platform asked for.
var ErrPlatformNotPresent = record.ErrPlatformNotPresent

// SelectPlatforms are the present platforms of r that want names (each
// entry of want picks the present platform it runs best,
// imagespec.BestMatch). Without want: every present platform. An entry of
// want that r does not hold is NotFound, in dockerd's words
// (record.Select).
func (s *Store) SelectPlatforms(r *ImageRecord, name string, want []ocispec.Platform) ([]PlatformImage, error) {
	return record.Select(r, name, want, func(p PlatformImage) ocispec.Platform { return s.PlatformOf(r, p) })
}

// PlatformView is r seen as the platform want (nil: r as recorded, which
// is the daemon's platform when present, else the first present one).
func (s *Store) PlatformView(r *ImageRecord, name string, want *ocispec.Platform) (*ImageRecord, error) {
	if want == nil {
		return r, nil
	}
	ps, err := s.SelectPlatforms(r, name, []ocispec.Platform{*want})
	if err != nil {
		return nil, err
	}
	return r.View(ps[0]), nil
}

// withPlatforms is img with platforms ps (record.WithPlatforms), the
// primary one the daemon's platform runs best.
func (s *Store) withPlatforms(img ImageRecord, ps []PlatformImage) ImageRecord {
	return record.WithPlatforms(img, ps, s.platform, s.ReadIndex)
}

// RemovePlatforms drops the present platforms ps from image id (rmi
// --platform). The image keeps its references; when the primary platform
// goes, the record moves to the new primary's config digest (its new ID).
// Removing every present platform deletes the image. The blobs only the
// removed platforms used are collected after the commit (Update with
// prune). It returns the image's ID afterwards ("" when deleted).
func (tx *Txn) RemovePlatforms(id digest.Digest, ps []PlatformImage) (digest.Digest, error) {
	rec := tx.Image(id)
	if rec == nil {
		return "", NoSuchImage(id.String())
	}
	var keep []PlatformImage
	for _, p := range rec.Present() {
		if !slices.ContainsFunc(ps, func(r PlatformImage) bool { return r.Manifest.Digest == p.Manifest.Digest }) {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		tx.Delete(id)
		return "", nil
	}
	img := tx.s.withPlatforms(*rec.Clone(), keep)
	tx.candidates = append(tx.candidates, tx.usesOf(id, rec)...)
	uses := tx.s.blobsOf(&img)
	if img.ID == id {
		rec.Platforms, rec.Manifest = img.Platforms, img.Manifest
		tr := tx.recs[id]
		tr.uses, tr.setUses = uses, true
		return id, nil
	}
	tags, digs := append([]string{}, rec.RepoTags...), append([]string{}, rec.RepoDigests...)
	tx.Delete(id)
	img.RepoTags, img.RepoDigests = nil, nil
	tx.put(img, tags, digs, uses)
	return img.ID, nil
}
