package store

import (
	"encoding/json"
	"slices"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/imagespec"
)

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
