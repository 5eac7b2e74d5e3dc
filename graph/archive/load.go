package archive

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/decompress"
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
// (Engine 29 keeps them), recorded under the daemon's platform
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
