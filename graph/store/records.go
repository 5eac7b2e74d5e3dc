package store

import (
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
	return &c
}

// state is one version of the records and their indexes. A committed state
// is never modified: a change works on a copy (Txn) and replaces it whole
// once the copy is on disk, so a failed write leaves memory as it was.
type state struct {
	images  map[digest.Digest]*ImageRecord
	refs    map[string]digest.Digest          // fully qualified tag or digest reference → image ID
	targets map[digest.Digest][]digest.Digest // target or manifest digest → image IDs
	shortID []string                          // sorted encoded IDs: prefix lookup in O(log n)
}

// clone deep-copies the records; the indexes are rebuilt by reindex.
// O(n) for n records: a few ms for 5,000 images, paid once per change.
func (st *state) clone() *state {
	c := &state{images: make(map[digest.Digest]*ImageRecord, len(st.images))}
	for id, r := range st.images {
		c.images[id] = r.Clone()
	}
	c.reindex()
	return c
}

// reindex rebuilds refs, targets and shortID from images; O(n log n).
func (st *state) reindex() {
	st.refs = map[string]digest.Digest{}
	st.targets = map[digest.Digest][]digest.Digest{}
	st.shortID = st.shortID[:0:0]
	for id, r := range st.images {
		for _, t := range r.RepoTags {
			st.refs[t] = id
		}
		for _, d := range r.RepoDigests {
			st.refs[d] = id
		}
		if r.Target.Digest != "" {
			st.targets[r.Target.Digest] = append(st.targets[r.Target.Digest], id)
		}
		if r.Manifest.Digest != "" && r.Manifest.Digest != r.Target.Digest {
			st.targets[r.Manifest.Digest] = append(st.targets[r.Manifest.Digest], id)
		}
		st.shortID = append(st.shortID, id.Encoded())
	}
	sort.Strings(st.shortID)
}

// sorted returns the records ordered by ID, for stable files.
func (st *state) sorted() []*ImageRecord {
	out := make([]*ImageRecord, 0, len(st.images))
	for _, r := range st.images {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// indexBytes is the index.json st calls for (the system check compares it
// with the file).
func indexBytes(st *state) ([]byte, error) {
	idx := ocispec.Index{
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{},
	}
	idx.SchemaVersion = 2
	for _, r := range st.sorted() {
		target := r.Target
		if target.Digest == "" {
			target = r.Manifest
		}
		target.Annotations = nil
		target.Data = nil
		if len(r.RepoTags) == 0 {
			idx.Manifests = append(idx.Manifests, target)
			continue
		}
		for _, t := range r.RepoTags {
			d := target
			tag := t
			if i := strings.LastIndex(t, ":"); i > strings.LastIndex(t, "/") {
				tag = t[i+1:]
			}
			d.Annotations = map[string]string{AnnRefName: tag, AnnImageName: t}
			idx.Manifests = append(idx.Manifests, d)
		}
	}
	return json.Marshal(idx)
}

// Txn is one change to the records, made on a private copy. Its methods
// edit the copy; Update commits it whole or not at all.
type Txn struct {
	st      *state
	deleted []*ImageRecord // deleted, or replaced by a record with another target or manifest
}

// Lookup resolves name in the transaction's view. The records a Txn returns
// are its own copies: edits to them (LastTagTime) are part of the change.
func (tx *Txn) Lookup(name string) (*ImageRecord, error) { return tx.st.lookup(name) }

// Image is the record with the ID id, or nil.
func (tx *Txn) Image(id digest.Digest) *ImageRecord { return tx.st.images[id] }

// Images are the records, in ID order.
func (tx *Txn) Images() []*ImageRecord { return tx.st.sorted() }

// RefTarget is the image the fully qualified reference ref names.
func (tx *Txn) RefTarget(ref string) (digest.Digest, bool) {
	id, ok := tx.st.refs[ref]
	return id, ok
}

// PointRef makes ref (fully qualified) name image id, taking it from any
// other image.
func (tx *Txn) PointRef(ref string, id digest.Digest) error {
	st := tx.st
	rec := st.images[id]
	if rec == nil {
		return fmt.Errorf("No such image: %s%.0w", id, errdefs.ErrNotFound)
	}
	if other, ok := st.refs[ref]; ok && other != id {
		if o := st.images[other]; o != nil {
			o.RepoTags = slices.DeleteFunc(o.RepoTags, func(s string) bool { return s == ref })
			o.RepoDigests = slices.DeleteFunc(o.RepoDigests, func(s string) bool { return s == ref })
		}
	}
	st.refs[ref] = id
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
	st := tx.st
	id, ok := st.refs[ref]
	if !ok {
		return
	}
	delete(st.refs, ref)
	if r := st.images[id]; r != nil {
		r.RepoTags = slices.DeleteFunc(r.RepoTags, func(s string) bool { return s == ref })
		r.RepoDigests = slices.DeleteFunc(r.RepoDigests, func(s string) bool { return s == ref })
	}
}

// Delete removes the image id and its references. Its blobs become
// candidates for collection once the change is committed.
func (tx *Txn) Delete(id digest.Digest) {
	rec := tx.st.images[id]
	if rec == nil {
		return
	}
	for _, r := range append(append([]string{}, rec.RepoTags...), rec.RepoDigests...) {
		tx.DropRef(r)
	}
	delete(tx.st.images, id)
	tx.deleted = append(tx.deleted, rec)
}

// put records img (see Store.Put) in the transaction.
func (tx *Txn) put(img ImageRecord, tags, digs []string) {
	rec := tx.st.images[img.ID]
	if rec != nil && (rec.Target.Digest != img.Target.Digest || rec.Manifest.Digest != img.Manifest.Digest) {
		// The old index, manifest and other platforms' blobs become
		// candidates for collection (kept when still in use).
		tx.deleted = append(tx.deleted, rec.Clone())
	}
	if rec == nil {
		rec = &ImageRecord{ID: img.ID, RepoTags: []string{}, RepoDigests: []string{}, Created: img.Created}
		if rec.Created.IsZero() {
			rec.Created = time.Now().UTC()
		}
		tx.st.images[img.ID] = rec
		tx.st.shortID = nil // rebuilt at commit
	}
	rec.Target = img.Target
	rec.Manifest = img.Manifest
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

// Update runs fn on a copy of the records and, when fn succeeds, writes the
// copy to disk and only then makes it the store's state; the blobs of
// images fn deleted are collected afterwards (prune: false keeps them, as
// noprune=1 asks). A failing fn or write leaves memory and disk as they
// were. It returns the bytes freed.
func (s *Store) Update(prune bool, fn func(tx *Txn) error) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updateLocked(prune, fn)
}

func (s *Store) updateLocked(prune bool, fn func(tx *Txn) error) (int64, error) {
	tx := &Txn{st: s.st.clone()}
	if err := fn(tx); err != nil {
		return 0, err
	}
	tx.st.reindex()
	if err := s.syncPendingDirs(); err != nil {
		return 0, fmt.Errorf("save image records: %w", err)
	}
	if err := s.persist(tx.st); err != nil {
		return 0, fmt.Errorf("save image records: %w", err)
	}
	s.st = tx.st
	if !prune || len(tx.deleted) == 0 {
		return 0, nil
	}
	var candidates []digest.Digest
	for _, r := range tx.deleted {
		candidates = append(candidates, s.blobsOf(r)...)
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	return s.collectLocked(s.st, candidates), nil
}

// Put records imgs, in one change, and points their RepoTags and
// RepoDigests at them (moving them from any other image, which becomes
// dangling when it loses its last reference). Every blob they name must be
// stored, and pinned by lease (which the caller took before it checked or
// wrote them): Put checks them again under the records lock, so what it
// records is complete.
func (s *Store) Put(lease *Lease, imgs ...ImageRecord) error {
	type put struct {
		img        ImageRecord
		tags, digs []string
		layers     []ocispec.Descriptor
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
		for _, ld := range meta.Manifest.Layers {
			lease.Add(ld.Digest)
		}
		puts = append(puts, put{img, tags, digs, meta.Manifest.Layers})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range puts {
		for _, d := range []digest.Digest{p.img.Target.Digest, p.img.Manifest.Digest, p.img.ID} {
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
	_, err := s.updateLocked(true, func(tx *Txn) error {
		for _, p := range puts {
			tx.put(p.img, p.tags, p.digs)
		}
		return nil
	})
	return err
}

// ImagesByRepository returns the images tagged in repository (fully
// qualified name) with their tags, for push.
func (s *Store) ImagesByRepository(repo string) (map[string]*ImageRecord, error) {
	named, err := reference.ParseNormalizedNamed(repo)
	if err != nil {
		return nil, fmt.Errorf("%v%.0w", err, errdefs.ErrInvalidArgument)
	}
	name := named.Name()
	out := map[string]*ImageRecord{}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, r := range s.st.images {
		for _, t := range r.RepoTags {
			n, err := reference.ParseNormalizedNamed(t)
			if err != nil {
				continue
			}
			if nt, ok := n.(reference.NamedTagged); ok && n.Name() == name {
				out[nt.Tag()] = r.Clone()
			}
		}
	}
	return out, nil
}

// Count returns the number of images (for /info).
func (s *Store) Count() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.st.images)
}

// Snapshot copies the records so callers can read blobs without a lock.
func (s *Store) Snapshot() []*ImageRecord {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*ImageRecord, 0, len(s.st.images))
	for _, r := range s.st.images {
		out = append(out, r.Clone())
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
	if imagespec.IsIndex(rec.Target.MediaType) {
		out = append(out, s.indexChildren(rec.Target.Digest)...)
	}
	return out
}

// indexChildren lists the stored blobs reachable from the index d (one level
// of manifests, their configs and layers).
func (s *Store) indexChildren(d digest.Digest) []digest.Digest {
	children, ok := s.docRefs(d)
	if !ok {
		return nil
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
	refs, ok := s.refs[d]
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
	s.refs[d] = refs
	s.metaMu.Unlock()
	return refs, true
}
