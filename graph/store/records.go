package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/imagespec"
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
	// written before issue 23 (Present: the one platform, Manifest).
	Platforms []PlatformImage `json:",omitempty"`
	// RepoTags are fully qualified references (docker.io/library/busybox:latest);
	// shown in familiar form on the API.
	RepoTags []string
	// RepoDigests are fully qualified name@digest references.
	RepoDigests []string
	LastTagTime time.Time
	Created     time.Time
	// Trust is the signature policy's verdict the image was pulled under
	// (issue 21); nil when no policy applied.
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

// Txn is one change to the records. It reads the database through the
// write transaction it runs in and keeps its own edits apart (an overlay),
// so a failing fn leaves nothing behind, even when it shares a
// group-committed transaction with other changes (commit.go). Update
// writes the overlay into the transaction only once fn succeeded.
type Txn struct {
	s    *Store
	v    dbView
	recs map[digest.Digest]*txRec // records read or written by the change
	refs map[string]digest.Digest // references set ("" = dropped)
	// candidates are the blobs of records deleted, or replaced by a record
	// with another target or manifest: collected after the commit when
	// the change asked to prune.
	candidates []digest.Digest
	count      int64 // images added minus images deleted
}

// txRec is one record as the change sees it.
type txRec struct {
	rec  *ImageRecord // nil: deleted by the change
	orig []byte       // as stored before the change; nil: new
	// old is orig decoded, for apply (its targets and references: its
	// slices are the change's own copies).
	old  *ImageRecord
	uses []digest.Digest
	// setUses: uses replaces the stored list.
	setUses bool
}

func newTxn(s *Store, tx *bolt.Tx) *Txn {
	return &Txn{s: s, v: dbView{tx}, recs: map[digest.Digest]*txRec{}, refs: map[string]digest.Digest{}}
}

// image is the record id as the change sees it (nil: none). The record is
// the change's own copy: edits to it are part of the change.
func (tx *Txn) image(id digest.Digest) (*ImageRecord, error) {
	if tr, ok := tx.recs[id]; ok {
		return tr.rec, nil
	}
	b := tx.v.raw(id)
	if b == nil {
		return nil, nil
	}
	r, err := decodeRecord(b)
	if err != nil {
		return nil, fmt.Errorf("graph: image record %s: %w", id, err)
	}
	old := *r
	old.RepoTags, old.RepoDigests = slices.Clone(r.RepoTags), slices.Clone(r.RepoDigests)
	tx.recs[id] = &txRec{rec: r, orig: bytes.Clone(b), old: &old}
	return r, nil
}

func (tx *Txn) refTarget(ref string) (digest.Digest, bool) {
	if id, ok := tx.refs[ref]; ok {
		return id, id != ""
	}
	return tx.v.refTarget(ref)
}

func (tx *Txn) byTarget(d digest.Digest) []digest.Digest {
	var out []digest.Digest
	seen := map[digest.Digest]bool{}
	for _, id := range tx.v.byTarget(d) {
		seen[id] = true
		if tr, ok := tx.recs[id]; ok && (tr.rec == nil || !slices.Contains(targetsOf(tr.rec), d)) {
			continue // deleted or retargeted by the change
		}
		out = append(out, id)
	}
	for id, tr := range tx.recs {
		if !seen[id] && tr.rec != nil && slices.Contains(targetsOf(tr.rec), d) {
			out = append(out, id)
		}
	}
	return out
}

func (tx *Txn) shortIDs(prefix string, max int, _ func(digest.Digest) bool) []digest.Digest {
	deleted := func(id digest.Digest) bool {
		tr, ok := tx.recs[id]
		return ok && tr.rec == nil
	}
	out := tx.v.shortIDs(prefix, max, deleted)
	for id, tr := range tx.recs {
		if tr.orig == nil && tr.rec != nil && strings.HasPrefix(string(id), prefix) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// Lookup resolves name in the transaction's view. The records a Txn returns
// are its own copies: edits to them (LastTagTime) are part of the change.
func (tx *Txn) Lookup(name string) (*ImageRecord, error) { return lookupIn(tx, name) }

// Image is the record with the ID id, or nil.
func (tx *Txn) Image(id digest.Digest) *ImageRecord {
	r, err := tx.image(id)
	if err != nil {
		tx.s.log.WithError(err).Warn("read image record")
	}
	return r
}

// Images are the records, in ID order. It reads every record: prune's
// walk, not a per-request path.
func (tx *Txn) Images() []*ImageRecord {
	var out []*ImageRecord
	seen := map[digest.Digest]bool{}
	_ = tx.v.tx.Bucket(bucketImages).ForEach(func(k, b []byte) error {
		tx.s.scanned(tx.v.tx, len(k)+len(b))
		id := digest.Digest(k)
		seen[id] = true
		if r := tx.Image(id); r != nil {
			out = append(out, r)
		}
		return nil
	})
	for id, tr := range tx.recs {
		if !seen[id] && tr.rec != nil {
			out = append(out, tr.rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// RefTarget is the image the fully qualified reference ref names.
func (tx *Txn) RefTarget(ref string) (digest.Digest, bool) { return tx.refTarget(ref) }

// PointRef makes ref (fully qualified) name image id, taking it from any
// other image.
func (tx *Txn) PointRef(ref string, id digest.Digest) error {
	rec := tx.Image(id)
	if rec == nil {
		return fmt.Errorf("No such image: %s%.0w", id, errdefs.ErrNotFound)
	}
	if other, ok := tx.refTarget(ref); ok && other != id {
		if o := tx.Image(other); o != nil {
			o.RepoTags = slices.DeleteFunc(o.RepoTags, func(s string) bool { return s == ref })
			o.RepoDigests = slices.DeleteFunc(o.RepoDigests, func(s string) bool { return s == ref })
		}
	}
	tx.refs[ref] = id
	if strings.Contains(ref, "@") {
		if !slices.Contains(rec.RepoDigests, ref) {
			rec.RepoDigests = append(rec.RepoDigests, ref)
			sort.Strings(rec.RepoDigests)
		}
		return nil
	}
	if !slices.Contains(rec.RepoTags, ref) {
		rec.RepoTags = append(rec.RepoTags, ref)
		sort.Strings(rec.RepoTags)
	}
	return nil
}

// DropRef removes ref from the image it names.
func (tx *Txn) DropRef(ref string) {
	id, ok := tx.refTarget(ref)
	if !ok {
		return
	}
	tx.refs[ref] = ""
	if r := tx.Image(id); r != nil {
		r.RepoTags = slices.DeleteFunc(r.RepoTags, func(s string) bool { return s == ref })
		r.RepoDigests = slices.DeleteFunc(r.RepoDigests, func(s string) bool { return s == ref })
	}
}

// Delete removes the image id and its references. Its blobs become
// candidates for collection once the change is committed.
func (tx *Txn) Delete(id digest.Digest) {
	rec := tx.Image(id)
	if rec == nil {
		return
	}
	for _, r := range append(append([]string{}, rec.RepoTags...), rec.RepoDigests...) {
		tx.DropRef(r)
	}
	tx.candidates = append(tx.candidates, tx.usesOf(id, rec)...)
	tr := tx.recs[id]
	tr.rec = nil
	tx.count--
}

// usesOf is what the record id keeps alive as the change sees it: the list
// the change set, else the stored one, else (a record of an older store)
// what its documents name now.
func (tx *Txn) usesOf(id digest.Digest, rec *ImageRecord) []digest.Digest {
	if tr := tx.recs[id]; tr != nil && tr.setUses {
		return tr.uses
	}
	if u, ok := tx.v.uses(id); ok {
		return u
	}
	return tx.s.blobsOf(rec)
}

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

// apply writes the change into its bbolt transaction. Called once fn
// succeeded; an error leaves the transaction to be rolled back.
func (tx *Txn) apply() error {
	btx := tx.v.tx
	images, targets, blobs, uses := btx.Bucket(bucketImages), btx.Bucket(bucketTargets), btx.Bucket(bucketBlobs), btx.Bucket(bucketUses)
	sums, labels := btx.Bucket(bucketSummaries), btx.Bucket(bucketLabels)
	ids := make([]digest.Digest, 0, len(tx.recs))
	for id := range tx.recs {
		ids = append(ids, id)
	}
	slices.Sort(ids) // sorted keys: fewer page splits
	for _, id := range ids {
		tr := tx.recs[id]
		old := tr.old
		if old == nil && tr.orig != nil {
			var err error
			if old, err = decodeRecord(tr.orig); err != nil {
				return err
			}
		}
		key := []byte(id)
		var nb []byte
		if tr.rec != nil {
			var err error
			if nb, err = json.Marshal(tr.rec); err != nil {
				return err
			}
		}
		switch {
		case tr.rec == nil && old == nil:
			continue // put and deleted by the same change
		case tr.rec == nil:
			if err := images.Delete(key); err != nil {
				return err
			}
			if err := indexLabels(labels, storedSummary(sums, id), nil); err != nil {
				return err
			}
			if err := sums.Delete(key); err != nil {
				return err
			}
		case old == nil || !bytes.Equal(nb, tr.orig):
			if err := images.Put(key, nb); err != nil {
				return err
			}
			// The summary goes with the record: its meta part is kept
			// when the manifest is the same (a tag reads no document).
			// The labels index goes with the summary (listindex.go).
			prev := storedSummary(sums, id)
			sm := tx.s.summaryOf(tr.rec, prev, old)
			if err := putSummary(sums, sm); err != nil {
				return err
			}
			if err := indexLabels(labels, prev, sm); err != nil {
				return err
			}
		}
		// targets: (target, id) and (manifest, id).
		var oldT, newT []digest.Digest
		if old != nil {
			oldT = targetsOf(old)
		}
		if tr.rec != nil {
			newT = targetsOf(tr.rec)
		}
		if !slices.Equal(oldT, newT) {
			for _, d := range oldT {
				if err := targets.Delete(pairKey(d, id)); err != nil {
					return err
				}
			}
			for _, d := range newT {
				if err := targets.Put(pairKey(d, id), nil); err != nil {
					return err
				}
			}
		}
		// uses and blobs: replaced when the change set them or deleted
		// the record.
		if tr.rec != nil && !tr.setUses {
			continue
		}
		if prev, ok := tx.v.uses(id); ok {
			for _, d := range prev {
				if err := blobs.Delete(pairKey(d, id)); err != nil {
					return err
				}
			}
		}
		if tr.rec == nil {
			if err := uses.Delete(key); err != nil {
				return err
			}
			continue
		}
		if err := putUses(uses, blobs, id, tr.uses); err != nil {
			return err
		}
	}
	refs := btx.Bucket(bucketRefs)
	for ref, id := range tx.refs {
		var err error
		if id == "" {
			err = refs.Delete([]byte(ref))
		} else {
			err = refs.Put([]byte(ref), []byte(id))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// putUses writes the blobs id keeps alive, both ways.
func putUses(uses, blobs *bolt.Bucket, id digest.Digest, list []digest.Digest) error {
	list = dedupDigests(list)
	if err := putUsesList(uses, id, list); err != nil {
		return err
	}
	for _, d := range list {
		if err := blobs.Put(pairKey(d, id), nil); err != nil {
			return err
		}
	}
	return nil
}

// putUsesList writes the uses entry of id: list, deduplicated and sorted.
func putUsesList(uses *bolt.Bucket, id digest.Digest, list []digest.Digest) error {
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	return uses.Put([]byte(id), b)
}

func dedupDigests(in []digest.Digest) []digest.Digest {
	out := make([]digest.Digest, 0, len(in))
	for _, d := range in {
		if d != "" {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
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

// Update runs fn as one change to the records and commits it whole or not
// at all: fn's edits reach the database only if fn succeeds, and the
// change is durable (one fsync, shared with the concurrent changes
// committed with it) when Update returns. The blobs of images fn deleted
// are collected afterwards (prune: false keeps them, as noprune=1 asks).
// It returns the bytes freed.
func (s *Store) Update(prune bool, fn func(tx *Txn) error) (int64, error) {
	if prune {
		s.gcMu.RLock()
		defer s.gcMu.RUnlock()
	}
	tx, err := s.commit(fn)
	if err != nil {
		return 0, err
	}
	if !prune || len(tx.candidates) == 0 {
		return 0, nil
	}
	return s.collect(tx.candidates), nil
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

// blobsOf lists the blobs that rec keeps alive: its target (and, for an
// index, the stored child manifests with their configs and layers), its
// manifest, config and layers.
func (s *Store) blobsOf(rec *ImageRecord) []digest.Digest {
	out := []digest.Digest{rec.Target.Digest, rec.Manifest.Digest, rec.ID}
	if m, err := s.Meta(rec); err == nil {
		for _, ld := range m.Manifest.Layers {
			out = append(out, ld.Digest)
		}
	}
	for _, p := range rec.Platforms {
		out = append(out, p.Manifest.Digest, p.Config)
		if refs, ok := s.docRefs(p.Manifest.Digest); ok {
			out = append(out, refs...)
		}
	}
	if imagespec.IsIndex(rec.Target.MediaType) {
		out = append(out, s.indexChildren(rec)...)
	}
	return out
}

// indexChildren lists the stored blobs reachable from rec's index target
// (one level of manifests, their configs and layers) that rec keeps: with
// Platforms recorded, the entries that are not another platform's image
// (attestations, nested indexes) — a platform not present is not kept, so
// rmi --platform frees it; a record of an older store keeps every stored
// entry, as it did when it was written.
func (s *Store) indexChildren(rec *ImageRecord) []digest.Digest {
	var children []digest.Digest
	if len(rec.Platforms) > 0 {
		idx, err := s.ReadIndex(rec.Target.Digest)
		if err != nil {
			return nil
		}
		for _, m := range idx.Manifests {
			if m.Platform == nil || imagespec.IsAttestation(m) || imagespec.IsIndex(m.MediaType) {
				children = append(children, m.Digest)
			}
		}
	} else {
		var ok bool
		if children, ok = s.docRefs(rec.Target.Digest); !ok {
			return nil
		}
	}
	var out []digest.Digest
	for _, m := range children {
		refs, ok := s.docRefs(m)
		if !ok && !s.HasBlob(m) {
			continue // an entry this store does not hold (another platform)
		}
		out = append(out, m)
		out = append(out, refs...)
	}
	return out
}

// docRefs is what the stored document d names: an index's manifests, a
// manifest's config and layers. ok is false when d is not stored or does not
// parse. Documents are immutable, so the answer is cached until the blob is
// collected.
func (s *Store) docRefs(d digest.Digest) ([]digest.Digest, bool) {
	s.metaMu.Lock()
	refs, ok := s.refs.Get(d)
	s.metaMu.Unlock()
	if ok {
		return refs, true
	}
	b, err := s.ReadBlob(d, MaxManifestSize)
	if err != nil {
		return nil, false
	}
	var doc struct {
		Manifests []ocispec.Descriptor `json:"manifests"`
		Config    ocispec.Descriptor   `json:"config"`
		Layers    []ocispec.Descriptor `json:"layers"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return nil, false
	}
	refs = []digest.Digest{}
	for _, m := range doc.Manifests {
		refs = append(refs, m.Digest)
	}
	if doc.Config.Digest != "" {
		refs = append(refs, doc.Config.Digest)
	}
	for _, l := range doc.Layers {
		refs = append(refs, l.Digest)
	}
	s.metaMu.Lock()
	s.refs.Add(d, refs)
	s.metaMu.Unlock()
	return refs, true
}

func descDigests(ds []ocispec.Descriptor) []digest.Digest {
	out := make([]digest.Digest, len(ds))
	for i, d := range ds {
		out[i] = d.Digest
	}
	return out
}
