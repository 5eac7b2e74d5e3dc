package store

import (
	"fmt"
	"slices"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/imagespec"
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
var ErrPlatformNotPresent = fmt.Errorf("platform not present")

// SelectPlatforms are the present platforms of r that want names (each
// entry of want picks the present platform it runs best,
// imagespec.BestMatch). Without want: every present platform. An entry of
// want that r does not hold is NotFound, in dockerd's words.
func (s *Store) SelectPlatforms(r *ImageRecord, name string, want []ocispec.Platform) ([]PlatformImage, error) {
	present := r.Present()
	if len(want) == 0 {
		return present, nil
	}
	haves := make([]ocispec.Platform, len(present))
	for i, p := range present {
		haves[i] = s.PlatformOf(r, p)
	}
	var out []PlatformImage
	for _, w := range want {
		i := imagespec.BestMatch(w, haves)
		if i < 0 {
			return nil, fmt.Errorf("image with reference %s was found but does not provide the specified platform (%s)%.0w%.0w",
				name, imagespec.FormatPlatform(w), ErrPlatformNotPresent, errdefs.ErrNotFound)
		}
		if !slices.ContainsFunc(out, func(o PlatformImage) bool { return o.Manifest.Digest == present[i].Manifest.Digest }) {
			out = append(out, present[i])
		}
	}
	return out, nil
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

// primary is the platform of ps an image is recorded under: the one the
// daemon's platform runs best, else the first (ps are in the index's
// order: Docker's fallback to any present platform takes the first).
func (s *Store) primary(ps []PlatformImage) PlatformImage {
	haves := make([]ocispec.Platform, len(ps))
	for i, p := range ps {
		haves[i] = p.Platform
	}
	if i := imagespec.BestMatch(s.platform, haves); i >= 0 {
		return ps[i]
	}
	return ps[0]
}

// orderPlatforms sorts ps by their position in the index target (unknown
// ones last, in their order) and drops duplicates (the first kept).
func (s *Store) orderPlatforms(target digest.Digest, ps []PlatformImage) []PlatformImage {
	var out []PlatformImage
	for _, p := range ps {
		if !slices.ContainsFunc(out, func(o PlatformImage) bool { return o.Manifest.Digest == p.Manifest.Digest }) {
			out = append(out, p)
		}
	}
	pos := map[digest.Digest]int{}
	if idx, err := s.ReadIndex(target); err == nil {
		for i, m := range idx.Manifests {
			if _, ok := pos[m.Digest]; !ok {
				pos[m.Digest] = i
			}
		}
	}
	at := func(d digest.Digest) int {
		if i, ok := pos[d]; ok {
			return i
		}
		return len(pos)
	}
	slices.SortStableFunc(out, func(a, b PlatformImage) int { return at(a.Manifest.Digest) - at(b.Manifest.Digest) })
	return out
}

// withPlatforms is img with platforms ps (ordered, deduplicated): its ID
// and Manifest become the primary platform's. An image whose target is not
// an index keeps no list.
func (s *Store) withPlatforms(img ImageRecord, ps []PlatformImage) ImageRecord {
	if !imagespec.IsIndex(img.Target.MediaType) || len(ps) == 0 {
		img.Platforms = nil
		return img
	}
	ps = s.orderPlatforms(img.Target.Digest, ps)
	for i := range ps {
		ps[i].Manifest.Data = nil
		if ps[i].Manifest.Platform == nil && (ps[i].Platform.OS != "" || ps[i].Platform.Architecture != "") {
			p := ps[i].Platform
			ps[i].Manifest.Platform = &p
		}
	}
	img.Platforms = ps
	p := s.primary(ps)
	img.ID, img.Manifest = p.Config, p.Manifest
	return img
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
