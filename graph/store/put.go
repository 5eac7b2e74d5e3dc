package store

import (
	"fmt"
	"slices"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/imagespec"
)

// put records img (see Store.Put) in the transaction; uses are the blobs it
// keeps alive.
func (tx *Txn) put(img ImageRecord, tags, digs []string, uses []digest.Digest) {
	rec := tx.Image(img.ID)
	if rec != nil && (rec.Target.Digest != img.Target.Digest || rec.Manifest.Digest != img.Manifest.Digest || !samePlatforms(rec.Present(), img.Present())) {
		// The old index, manifest and other platforms' blobs become
		// candidates for collection (kept when still in use).
		tx.candidates = append(tx.candidates, tx.usesOf(img.ID, rec)...)
	}
	if rec == nil {
		rec = &ImageRecord{ID: img.ID, RepoTags: []string{}, RepoDigests: []string{}, Created: img.Created}
		if rec.Created.IsZero() {
			rec.Created = time.Now().UTC()
		}
		tr := tx.recs[img.ID]
		if tr == nil {
			tr = &txRec{}
			tx.recs[img.ID] = tr
		}
		tr.rec = rec
		tx.count++
	}
	tr := tx.recs[img.ID]
	tr.uses, tr.setUses = uses, true
	rec.Target = img.Target
	rec.Manifest = img.Manifest
	rec.Platforms = img.Platforms
	if img.Trust != nil { // the latest verdict; a load or import keeps the pull's
		rec.Trust = img.Trust
	}
	if img.LastTagTime.After(rec.LastTagTime) {
		rec.LastTagTime = img.LastTagTime
	}
	for _, ref := range append(tags, digs...) {
		_ = tx.PointRef(ref, img.ID)
	}
}

// targetsOf are the digests a name@digest lookup finds r by.
func targetsOf(r *ImageRecord) []digest.Digest {
	var out []digest.Digest
	if r.Target.Digest != "" {
		out = append(out, r.Target.Digest)
	}
	if r.Manifest.Digest != "" && r.Manifest.Digest != r.Target.Digest {
		out = append(out, r.Manifest.Digest)
	}
	// Every present platform's manifest: name@digest of any of them finds
	// the image (graph picks that platform).
	for _, p := range r.Platforms {
		if d := p.Manifest.Digest; d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// samePlatforms reports whether a and b hold the same manifests.
func samePlatforms(a, b []PlatformImage) bool {
	return slices.EqualFunc(a, b, func(x, y PlatformImage) bool { return x.Manifest.Digest == y.Manifest.Digest })
}

// mergeByTarget makes img, whose target is an index, the one image of that
// index: the platforms of every other record with the same target join
// img's, their references move to it and they are deleted (a second
// platform pulled into a tag adds to the image, as Docker's containerd
// store keeps it). img's ID and Manifest become the primary platform's.
func (tx *Txn) mergeByTarget(img *ImageRecord, tags, digs *[]string) {
	if !imagespec.IsIndex(img.Target.MediaType) {
		return
	}
	ps := slices.Clone(img.Present())
	var others []*ImageRecord
	for _, id := range tx.byTarget(img.Target.Digest) {
		o := tx.Image(id)
		if o == nil || o.Target.Digest != img.Target.Digest {
			continue
		}
		others = append(others, o)
		for _, p := range o.Present() {
			// A record of an older store may not say its platform.
			p.Platform = tx.s.PlatformOf(o, p)
			ps = append(ps, p)
		}
	}
	*img = tx.s.withPlatforms(*img, ps)
	for _, o := range others {
		if o.ID == img.ID {
			continue // updated in place by put
		}
		*tags = append(*tags, o.RepoTags...)
		*digs = append(*digs, o.RepoDigests...)
		if o.LastTagTime.After(img.LastTagTime) {
			img.LastTagTime = o.LastTagTime
		}
		if img.Trust == nil {
			img.Trust = o.Trust
		}
		if img.Created.IsZero() || (!o.Created.IsZero() && o.Created.Before(img.Created)) {
			img.Created = o.Created
		}
		tx.Delete(o.ID)
	}
}

// Put records imgs, in one change, and points their RepoTags and
// RepoDigests at them (moving them from any other image, which becomes
// dangling when it loses its last reference). Every blob they name must be
// stored, and pinned by lease (which the caller took before it checked or
// wrote them): Put checks them again in the change, so what it records is
// complete.
func (s *Store) Put(lease *Lease, imgs ...ImageRecord) error {
	type put struct {
		img        ImageRecord
		tags, digs []string
		layers     []ocispec.Descriptor
		uses       []digest.Digest
	}
	puts := make([]put, 0, len(imgs))
	for _, img := range imgs {
		if err := ValidateDigest(img.ID); err != nil {
			return fmt.Errorf("put image: %w", err)
		}
		if err := ValidateDigest(img.Manifest.Digest); err != nil {
			return fmt.Errorf("put image %s: manifest: %w", img.ID, err)
		}
		if img.Target.Digest == "" {
			img.Target = img.Manifest
		}
		if err := ValidateDigest(img.Target.Digest); err != nil {
			return fmt.Errorf("put image %s: target: %w", img.ID, err)
		}
		tags, err := NormaliseRefs(img.RepoTags, false)
		if err != nil {
			return err
		}
		digs, err := NormaliseRefs(img.RepoDigests, true)
		if err != nil {
			return err
		}
		lease.Add(img.Target.Digest, img.Manifest.Digest, img.ID)
		meta, err := s.Meta(&img)
		if err != nil {
			return err
		}
		layers := meta.Manifest.Layers
		if imagespec.IsIndex(img.Target.MediaType) {
			// The platforms the caller brings (the one pulled, or those
			// loaded), checked like the primary; those already recorded
			// for the index join in the change (mergeByTarget).
			ps := slices.Clone(img.Present()) // the caller's list stays as given
			if len(ps) == 1 && ps[0].Platform.OS == "" {
				c := meta.Config.Platform
				ps[0].Platform = ocispec.Platform{OS: c.OS, Architecture: c.Architecture, Variant: c.Variant, OSVersion: c.OSVersion}
			}
			for _, p := range ps {
				lease.Add(p.Manifest.Digest, p.Config)
				pm, err := s.Meta(img.View(p))
				if err != nil {
					return err
				}
				layers = append(layers, pm.Manifest.Layers...)
				lease.Add(descDigests(pm.Manifest.Layers)...)
			}
			img.Platforms = ps
			img = s.withPlatforms(img, ps)
		}
		uses := s.blobsOf(&img)
		lease.Add(uses...)
		puts = append(puts, put{img, tags, digs, layers, uses})
	}
	_, err := s.Update(true, func(tx *Txn) error {
		for _, p := range puts {
			ds := []digest.Digest{p.img.Target.Digest, p.img.Manifest.Digest, p.img.ID}
			for _, pi := range p.img.Platforms {
				ds = append(ds, pi.Manifest.Digest, pi.Config)
			}
			for _, d := range ds {
				if !s.HasBlob(d) {
					return fmt.Errorf("put image %s: blob %s not stored%.0w", p.img.ID, d, errdefs.ErrNotFound)
				}
			}
			for _, ld := range p.layers {
				if !s.HasBlob(ld.Digest) {
					return fmt.Errorf("put image %s: layer %s not stored%.0w", p.img.ID, ld.Digest, errdefs.ErrNotFound)
				}
			}
		}
		for _, p := range puts {
			img, tags, digs, uses := p.img, p.tags, p.digs, p.uses
			if before := img.Present(); imagespec.IsIndex(img.Target.MediaType) {
				tx.mergeByTarget(&img, &tags, &digs)
				if !samePlatforms(before, img.Present()) {
					// Platforms already recorded joined: they keep
					// their blobs, stored and named by the records
					// this change replaces.
					uses = s.blobsOf(&img)
				}
			}
			tx.put(img, tags, digs, uses)
		}
		return nil
	})
	return err
}
