package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"

	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/internal/decompress"

	"github.com/wharfproject/wharf/imagespec"
)

// loadedImage is one image found in an archive, with its references.
type loadedImage struct {
	rec  *store.ImageRecord
	tags []string // fully qualified
}

// LoadImage answers POST /images/load. It reads a docker-save tar (legacy:
// manifest.json + <id>.json + <layer>/layer.tar; or docker 25+: manifest.json
// + blobs/) or a pure OCI layout tar (index.json, names from the
// io.containerd.image.name / org.opencontainers.image.ref.name annotations).
// When index.json is present it wins (it keeps the manifest digests);
// manifest.json then only adds tags.
//
// Legacy uncompressed layers are stored as they are, under a Docker schema2
// manifest with media type application/vnd.docker.image.rootfs.diff.tar (so
// the layer digest equals its DiffID and a later save gives the same bytes);
// every DiffID is checked against the config. Each loaded image gets a
// {"stream":"Loaded image: <ref>\n"} line per tag, or "Loaded image ID:
// sha256:…" when untagged — also when quiet, as dockerd does; without
// quiet a "Loading layer" line per layer comes first.
//
// An image index is loaded with every platform the archive holds whole
// (Engine 29 keeps them; issue 23), recorded under the daemon's platform
// when present. platforms (docker load --platform; several at API 1.52)
// load only those platforms of a multi-platform image, and an image the
// archive does not hold for them is refused rather than loaded for another
// platform.
func (s *Archiver) LoadImage(ctx context.Context, r io.Reader, quiet bool, platforms []ocispec.Platform, out types.ProgressWriter) error {
	if s.admitLoad != nil {
		if err := s.admitLoad(ctx); err != nil {
			return err
		}
	}
	// The lease pins every blob the archive stages or names until the
	// images are recorded; releasing it collects what no image ended up
	// using (a failed load, or extra files).
	lease := s.st.NewLease()
	defer lease.Release()
	in := decompress.NewCounter(r)
	arc, err := s.readArchive(ctx, lease, in)
	var imgs []*loadedImage
	if err == nil {
		// DiffIDs are computed once per layer digest, and all of them
		// together may decompress no more than the cap allows for the
		// archive's own size: a small archive naming one bomb layer 400
		// times costs one decompression, not 400.
		arc.budget = decompress.NewBudget(in, s.bombLimit)
		arc.platform, arc.strict, arc.platforms = s.platform, len(platforms) > 0, platforms
		if len(platforms) > 0 {
			arc.platform = platforms[0]
		}
		imgs, err = s.loadImages(ctx, arc)
	}
	if err == nil {
		recs := make([]store.ImageRecord, 0, len(imgs))
		for _, im := range imgs {
			im.rec.RepoTags = im.tags
			if imagespec.IsIndex(im.rec.Target.MediaType) {
				// An index keeps its digest: name@index, as the pull
				// recorded it and Engine 29 shows after a load.
				for _, t := range im.tags {
					if n, err := reference.ParseNormalizedNamed(t); err == nil {
						if c, err := reference.WithDigest(reference.TrimNamed(n), im.rec.Target.Digest); err == nil {
							im.rec.RepoDigests = appendUnique(im.rec.RepoDigests, c.String())
						}
					}
				}
			}
			recs = append(recs, *im.rec)
		}
		err = s.st.Put(lease, recs...)
	}
	if err != nil {
		return err
	}
	if !quiet {
		if err := s.loadProgress(imgs, out); err != nil {
			return err
		}
	}
	var evs []store.Event
	for _, im := range imgs {
		id := im.rec.ID.String()
		evs = append(evs, store.NewEvent(id, events.ActionLoad, id, s.st.Labels(im.rec)))
		if len(im.tags) == 0 {
			if err := out.WriteMessage(jsonstream.Message{Stream: "Loaded image ID: " + id + "\n"}); err != nil {
				return err
			}
		}
		for _, t := range im.tags {
			if err := out.WriteMessage(jsonstream.Message{Stream: "Loaded image: " + store.Familiar(t) + "\n"}); err != nil {
				return err
			}
		}
	}
	store.Emit(ctx, s.events, evs...)
	return nil
}

func (s *Archiver) loadImages(ctx context.Context, arc *loadArchive) ([]*loadedImage, error) {
	var dm []dockerManifestEntry
	if b, ok := arc.files["manifest.json"]; ok {
		if err := json.Unmarshal(b, &dm); err != nil {
			return nil, fmt.Errorf("invalid archive: manifest.json: %v%.0w", err, errdefs.ErrInvalidArgument)
		}
	}
	if b, ok := arc.files[store.IndexFile]; ok {
		var idx ocispec.Index
		if err := json.Unmarshal(b, &idx); err != nil {
			return nil, fmt.Errorf("invalid archive: index.json: %v%.0w", err, errdefs.ErrInvalidArgument)
		}
		if len(idx.Manifests) > 0 {
			return s.loadOCI(ctx, arc, &idx, dm)
		}
	}
	if dm != nil {
		return s.loadDocker(ctx, arc, dm)
	}
	return nil, fmt.Errorf("invalid archive: no manifest.json or index.json found%.0w", errdefs.ErrInvalidArgument)
}

// loadProgress reports each layer as loaded, in dockerd's "Loading layer"
// shape (one final line per layer: the archive was staged before).
func (s *Archiver) loadProgress(imgs []*loadedImage, out types.ProgressWriter) error {
	l := s.st
	seen := map[digest.Digest]bool{}
	for _, im := range imgs {
		m, err := l.Meta(im.rec)
		if err != nil {
			continue
		}
		for _, ld := range m.Manifest.Layers {
			if seen[ld.Digest] {
				continue
			}
			seen[ld.Digest] = true
			msg := jsonstream.Message{
				Status:   "Loading layer",
				ID:       ld.Digest.Encoded()[:12],
				Progress: &jsonstream.Progress{Current: ld.Size, Total: ld.Size},
			}
			if err := out.WriteMessage(msg); err != nil {
				return err
			}
		}
	}
	return nil
}

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

// archiveDoc checks a descriptor of a manifest or index that the archive
// names (in index.json, or in an index): the blob is there, its size is the
// descriptor's, and its media type agrees with the document's own. A
// descriptor without a media type gets the document's (or, when the
// document has none either, what its shape says). It returns the
// descriptor to record (media type, digest and size only).
func (s *Archiver) archiveDoc(arc *loadArchive, desc ocispec.Descriptor, where string) (ocispec.Descriptor, error) {
	if err := store.ValidateDigest(desc.Digest); err != nil {
		return desc, fmt.Errorf("invalid archive: %s: %w", where, err)
	}
	if !arc.lease.Has(desc.Digest) {
		return desc, fmt.Errorf("invalid archive: blob %s named by %s is missing%.0w", desc.Digest, where, errdefs.ErrInvalidArgument)
	}
	if got := s.st.BlobSize(desc.Digest); got != desc.Size {
		return desc, fmt.Errorf("invalid archive: %s gives %s a size of %d bytes, the blob has %d%.0w", where, desc.Digest, desc.Size, got, errdefs.ErrInvalidArgument)
	}
	b, err := s.st.ReadBlob(desc.Digest, store.MaxManifestSize)
	if err != nil {
		return desc, fmt.Errorf("invalid archive: %s: %w", desc.Digest, err)
	}
	mt := imagespec.Sniff(b)
	if mt == "" {
		return desc, fmt.Errorf("invalid archive: %s is not a manifest or index%.0w", desc.Digest, errdefs.ErrInvalidArgument)
	}
	if desc.MediaType != "" && desc.MediaType != mt && !imagespec.DeclaresNoType(b) {
		return desc, fmt.Errorf("invalid archive: %s says %s is %s, the document says %s%.0w", where, desc.Digest, desc.MediaType, mt, errdefs.ErrInvalidArgument)
	}
	if desc.MediaType == "" {
		desc.MediaType = mt
	}
	return ocispec.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size}, nil
}

// checkManifest verifies that the manifest desc (checked by archiveDoc),
// its config and layers are stored and consistent with their descriptors,
// and that the layers' DiffIDs are the config's, and returns the record to
// put.
func (s *Archiver) checkManifest(ctx context.Context, arc *loadArchive, desc ocispec.Descriptor) (*store.ImageRecord, error) {
	l := s.st
	mb, err := l.ReadBlob(desc.Digest, store.MaxManifestSize)
	if err != nil {
		return nil, fmt.Errorf("invalid archive: manifest %s: %w", desc.Digest, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(mb, &m); err != nil || store.ValidateDigest(m.Config.Digest) != nil {
		return nil, fmt.Errorf("invalid archive: manifest %s is not an image manifest%.0w", desc.Digest, errdefs.ErrInvalidArgument)
	}
	if err := s.archiveBlobDesc(arc, desc.Digest, "config", m.Config); err != nil {
		return nil, err
	}
	cb, err := l.ReadBlob(m.Config.Digest, store.MaxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("invalid archive: config %s: %w", m.Config.Digest, err)
	}
	cfg, err := store.ParseImageConfig(cb)
	if err != nil {
		return nil, fmt.Errorf("invalid archive: %w", err)
	}
	if err := checkPlatform(arc, cb, m.Config.Digest.String()); err != nil {
		return nil, err
	}
	if len(cfg.RootFS.DiffIDs) != len(m.Layers) {
		return nil, fmt.Errorf("invalid archive: image %s has %d layers but %d diff IDs%.0w", m.Config.Digest, len(m.Layers), len(cfg.RootFS.DiffIDs), errdefs.ErrInvalidArgument)
	}
	for i, ld := range m.Layers {
		if err := s.archiveBlobDesc(arc, desc.Digest, fmt.Sprintf("layer %d", i), ld); err != nil {
			return nil, err
		}
		if !imagespec.IsTarLayer(ld.MediaType) {
			continue // zstd, foreign layers: their DiffID is not checked here
		}
		_, diffID, err := s.layerDiffID(ctx, arc, ld.Digest)
		if err != nil {
			return nil, fmt.Errorf("invalid archive: layer %s: %w", ld.Digest, err)
		}
		if diffID != cfg.RootFS.DiffIDs[i] {
			return nil, fmt.Errorf("invalid archive: layer %s has diff ID %s, config says %s%.0w", ld.Digest, diffID, cfg.RootFS.DiffIDs[i], errdefs.ErrInvalidArgument)
		}
	}
	return &store.ImageRecord{ID: m.Config.Digest, Target: desc, Manifest: desc, RepoTags: []string{}, RepoDigests: []string{}}, nil
}

// archiveBlobDesc checks that the blob a manifest's descriptor names is
// stored (pinned) with the descriptor's size and has a media type.
func (s *Archiver) archiveBlobDesc(arc *loadArchive, manifest digest.Digest, role string, d ocispec.Descriptor) error {
	if err := store.ValidateDigest(d.Digest); err != nil {
		return fmt.Errorf("invalid archive: manifest %s: %s: %w", manifest, role, err)
	}
	if !arc.lease.Has(d.Digest) {
		return fmt.Errorf("invalid archive: manifest %s: %s %s is missing%.0w", manifest, role, d.Digest, errdefs.ErrInvalidArgument)
	}
	if got := s.st.BlobSize(d.Digest); got != d.Size {
		return fmt.Errorf("invalid archive: manifest %s gives %s %s a size of %d bytes, the blob has %d%.0w", manifest, role, d.Digest, d.Size, got, errdefs.ErrInvalidArgument)
	}
	if d.MediaType == "" {
		return fmt.Errorf("invalid archive: manifest %s: %s %s has no media type%.0w", manifest, role, d.Digest, errdefs.ErrInvalidArgument)
	}
	return nil
}

// loadDocker records the images of a docker-save manifest.json, building a
// Docker schema2 manifest for each.
func (s *Archiver) loadDocker(ctx context.Context, arc *loadArchive, dm []dockerManifestEntry) ([]*loadedImage, error) {
	var out []*loadedImage
	for _, e := range dm {
		cb, err := s.archiveContent(arc, e.Config, store.MaxConfigSize)
		if err != nil {
			return nil, err
		}
		cfg, err := store.ParseImageConfig(cb)
		if err != nil {
			return nil, fmt.Errorf("invalid archive: %s: %w", e.Config, err)
		}
		if len(cfg.RootFS.DiffIDs) != len(e.Layers) {
			return nil, fmt.Errorf("invalid archive: %s has %d layers but %d diff IDs%.0w", e.Config, len(e.Layers), len(cfg.RootFS.DiffIDs), errdefs.ErrInvalidArgument)
		}
		var layers []ocispec.Descriptor
		for i, p := range e.Layers {
			d, err := s.archiveBlob(ctx, arc, p)
			if err != nil {
				return nil, err
			}
			mt, diffID, err := s.layerDiffID(ctx, arc, d.Digest)
			if err != nil {
				return nil, fmt.Errorf("invalid archive: layer %s: %w", p, err)
			}
			if diffID != cfg.RootFS.DiffIDs[i] {
				return nil, fmt.Errorf("invalid archive: layer %s has diff ID %s, config says %s%.0w", p, diffID, cfg.RootFS.DiffIDs[i], errdefs.ErrInvalidArgument)
			}
			layers = append(layers, ocispec.Descriptor{MediaType: mt, Digest: d.Digest, Size: d.Size})
		}
		if err := checkPlatform(arc, cb, e.Config); err != nil {
			return nil, err
		}
		rec, err := s.storeManifest(ctx, arc.lease, cb, layers, true)
		if err != nil {
			return nil, err
		}
		im := &loadedImage{rec: rec}
		for _, t := range e.RepoTags {
			n, err := store.NormaliseRefs([]string{t}, false)
			if err != nil {
				return nil, fmt.Errorf("invalid archive: %w", err)
			}
			im.tags = appendUnique(im.tags, n[0])
		}
		out = append(out, im)
	}
	return out, nil
}

// layerDiffID returns the media type of stored layer d (gzip or plain tar,
// by magic number) and the digest of its uncompressed content. Each digest
// is decompressed once per load (the archive may name it many times), the
// decompression draws on the load's budget, and it stops when ctx ends.
func (s *Archiver) layerDiffID(ctx context.Context, arc *loadArchive, d digest.Digest) (string, digest.Digest, error) {
	if r, ok := arc.diffIDs[d]; ok {
		return r.mediaType, r.diffID, r.err
	}
	mt, diffID, err := s.computeDiffID(ctx, arc.budget, d)
	if arc.diffIDs == nil {
		arc.diffIDs = map[digest.Digest]diffIDResult{}
	}
	arc.diffIDs[d] = diffIDResult{mt, diffID, err}
	return mt, diffID, err
}

type diffIDResult struct {
	mediaType string
	diffID    digest.Digest
	err       error
}

func (s *Archiver) computeDiffID(ctx context.Context, budget *decompress.Budget, d digest.Digest) (string, digest.Digest, error) {
	f, _, err := s.st.OpenBlob(d)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	var magic [2]byte
	n, _ := io.ReadFull(f, magic[:])
	if n == 2 && bytes.Equal(magic[:], []byte{0x1f, 0x8b}) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return "", "", err
		}
		src, err := decompress.Gzip(f, s.bombLimit)
		if err != nil {
			return "", "", err
		}
		if budget != nil {
			src = budget.Guard(src)
		}
		dg := digest.SHA256.Digester()
		if _, err := store.CopyCtx(ctx, dg.Hash(), src); err != nil {
			return "", "", err
		}
		return imagespec.MediaTypeDockerLayerGzip, dg.Digest(), nil
	}
	return imagespec.MediaTypeDockerLayer, d, nil
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	list = append(list, s)
	sort.Strings(list)
	return list
}

// checkPlatform refuses, when the client named platforms, an image whose
// config cb declares none of them.
func checkPlatform(arc *loadArchive, cb []byte, image string) error {
	if !arc.strict {
		return nil
	}
	have := imagespec.ConfigPlatform(cb)
	if have != nil && slices.ContainsFunc(arc.platforms, func(p ocispec.Platform) bool { return imagespec.PlatformMatches(p, *have) }) {
		return nil
	}
	return fmt.Errorf("image %s does not provide the specified platform (%s)%.0w", image, imagespec.FormatPlatform(arc.platform), errdefs.ErrNotFound)
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
