package archive

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/imagespec"
)

// loadOCI records the images of an OCI layout's index.json.
func (s *Archiver) loadOCI(ctx context.Context, arc *loadArchive, idx *ocispec.Index, dm []dockerManifestEntry) ([]*loadedImage, error) {
	tagsByConfig := map[string][]string{}
	for _, e := range dm {
		tagsByConfig[e.Config] = append(tagsByConfig[e.Config], e.RepoTags...)
	}
	byTarget := map[digest.Digest]*loadedImage{}
	var out []*loadedImage
	for _, desc := range idx.Manifests {
		if err := store.ValidateDigest(desc.Digest); err != nil {
			return nil, fmt.Errorf("invalid archive: index.json: %w", err)
		}
		target, err := s.archiveDoc(arc, desc, "index.json")
		if err != nil {
			return nil, err
		}
		manifest := target
		if imagespec.IsIndex(target.MediaType) {
			if manifest, err = s.pickManifest(arc, target.Digest, arc.platform); err != nil {
				return nil, err
			}
		}
		rec, err := s.checkManifest(ctx, arc, manifest)
		if err != nil {
			return nil, err
		}
		rec.Target = target
		if imagespec.IsIndex(target.MediaType) {
			if rec.Platforms, err = s.loadPlatforms(ctx, arc, target.Digest, manifest, rec.ID); err != nil {
				return nil, err
			}
		}
		im := byTarget[desc.Digest]
		if im == nil {
			im = &loadedImage{rec: rec}
			byTarget[desc.Digest] = im
			out = append(out, im)
		}
		if name := refFromAnnotations(desc.Annotations); name != "" {
			im.tags = appendUnique(im.tags, name)
		}
		for _, t := range tagsByConfig[blobTarPath(rec.ID)] {
			if n, err := store.NormaliseRefs([]string{t}, false); err == nil {
				im.tags = appendUnique(im.tags, n[0])
			}
		}
	}
	return out, nil
}

// refFromAnnotations returns the fully qualified name:tag an index entry
// names: io.containerd.image.name, else org.opencontainers.image.ref.name
// when it is a full reference (a bare tag like "1.0" names no repository).
func refFromAnnotations(ann map[string]string) string {
	for _, v := range []string{ann[store.AnnImageName], ann[store.AnnRefName]} {
		if v == "" {
			continue
		}
		if v == ann[store.AnnRefName] && !strings.ContainsAny(v, "/:") {
			continue
		}
		n, err := reference.ParseNormalizedNamed(v)
		if err != nil {
			continue
		}
		if _, ok := n.(reference.Canonical); ok {
			continue
		}
		return reference.TagNameOnly(n).String()
	}
	return ""
}

// pickManifest chooses the stored manifest of index d for platform p
// (the one p runs best, imagespec.BestMatch; the first stored image
// manifest when none matches), its descriptor checked against the blob.
func (s *Archiver) pickManifest(arc *loadArchive, d digest.Digest, p ocispec.Platform) (ocispec.Descriptor, error) {
	idx, err := s.st.ReadIndex(d)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("invalid archive: %w%.0w", err, errdefs.ErrInvalidArgument)
	}
	var first *ocispec.Descriptor
	var cands []ocispec.Descriptor
	var haves []ocispec.Platform
	for i, m := range idx.Manifests {
		if imagespec.IsIndex(m.MediaType) || !arc.lease.Has(m.Digest) || imagespec.IsAttestation(m) {
			continue
		}
		if first == nil {
			first = &idx.Manifests[i]
		}
		if m.Platform != nil {
			cands, haves = append(cands, m), append(haves, *m.Platform)
		}
	}
	if best := imagespec.BestMatch(p, haves); best >= 0 {
		return s.archiveDoc(arc, cands[best], "index "+d.String())
	}
	if arc.strict {
		return ocispec.Descriptor{}, fmt.Errorf("image index %s does not provide the specified platform (%s)%.0w", d, imagespec.FormatPlatform(p), errdefs.ErrNotFound)
	}
	if first == nil {
		return ocispec.Descriptor{}, fmt.Errorf("invalid archive: index %s has no stored manifest%.0w", d, errdefs.ErrInvalidArgument)
	}
	return s.archiveDoc(arc, *first, "index "+d.String())
}

// loadPlatforms are the platforms of index d loaded with it: primary (the
// manifest pickManifest chose, config id) and every other image entry the
// archive holds whole — or, when the client named platforms, the entries
// each of them runs best (one missing is NotFound). Each is checked as the
// primary is (checkManifest). An entry whose config or layers the archive
// lacks is left out without a platform asked for: a save of some
// platforms carries the whole index.
func (s *Archiver) loadPlatforms(ctx context.Context, arc *loadArchive, d digest.Digest, primary ocispec.Descriptor, id digest.Digest) ([]store.PlatformImage, error) {
	idx, err := s.st.ReadIndex(d)
	if err != nil {
		return nil, fmt.Errorf("invalid archive: %w%.0w", err, errdefs.ErrInvalidArgument)
	}
	var cands []ocispec.Descriptor
	var haves []ocispec.Platform
	for _, m := range idx.Manifests {
		if m.Platform == nil || imagespec.IsIndex(m.MediaType) || imagespec.IsAttestation(m) || !arc.lease.Has(m.Digest) {
			continue
		}
		cands, haves = append(cands, m), append(haves, *m.Platform)
	}
	var want []ocispec.Descriptor
	if arc.strict {
		for _, p := range arc.platforms {
			i := imagespec.BestMatch(p, haves)
			if i < 0 {
				return nil, fmt.Errorf("image index %s does not provide the specified platform (%s)%.0w", d, imagespec.FormatPlatform(p), errdefs.ErrNotFound)
			}
			want = append(want, cands[i])
		}
	} else {
		for _, m := range cands {
			if m.Digest == primary.Digest || s.wholeInArchive(arc, m.Digest) {
				want = append(want, m)
			}
		}
	}
	out := []store.PlatformImage{{Manifest: primary, Config: id}}
	if primary.Platform != nil {
		out[0].Platform = *primary.Platform
	}
	for _, m := range want {
		if m.Digest == primary.Digest || slices.ContainsFunc(out, func(p store.PlatformImage) bool { return p.Manifest.Digest == m.Digest }) {
			continue
		}
		desc, err := s.archiveDoc(arc, m, "index "+d.String())
		if err != nil {
			return nil, err
		}
		r, err := s.checkManifest(ctx, arc, desc)
		if err != nil {
			return nil, err
		}
		out = append(out, store.PlatformImage{Platform: *m.Platform, Manifest: desc, Config: r.ID})
	}
	return out, nil
}

// wholeInArchive reports whether the archive holds manifest d's config and
// every layer.
func (s *Archiver) wholeInArchive(arc *loadArchive, d digest.Digest) bool {
	b, err := s.st.ReadBlob(d, store.MaxManifestSize)
	if err != nil {
		return false
	}
	var m ocispec.Manifest
	if json.Unmarshal(b, &m) != nil || m.Config.Digest == "" || !arc.lease.Has(m.Config.Digest) {
		return false
	}
	for _, l := range m.Layers {
		if !arc.lease.Has(l.Digest) {
			return false
		}
	}
	return true
}
