package graph

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// loadedImage is one image found in an archive, with its references.
type loadedImage struct {
	rec  *ImageRecord
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
func (s *Store) LoadImage(ctx context.Context, r io.Reader, quiet bool, out types.ProgressWriter) error {
	l := s.local
	arc, err := l.readArchive(ctx, r)
	var imgs []*loadedImage
	if err == nil {
		imgs, err = s.loadImages(ctx, arc)
	}
	if err == nil {
		for _, im := range imgs {
			im.rec.RepoTags = im.tags
			if err = l.putImage(*im.rec); err != nil {
				break
			}
		}
	}
	// Blobs this archive brought that no image ended up using (a failed
	// load, or extra files) are removed again.
	l.mu.Lock()
	l.collectGarbage(arc.created)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if !quiet {
		if err := l.loadProgress(imgs, out); err != nil {
			return err
		}
	}
	var evs []imageEvent
	for _, im := range imgs {
		id := im.rec.ID.String()
		evs = append(evs, newImageEvent(id, events.ActionLoad, id, l.labelsOf(im.rec)))
		if len(im.tags) == 0 {
			if err := out.WriteMessage(jsonstream.Message{Stream: "Loaded image ID: " + id + "\n"}); err != nil {
				return err
			}
		}
		for _, t := range im.tags {
			if err := out.WriteMessage(jsonstream.Message{Stream: "Loaded image: " + familiar(t) + "\n"}); err != nil {
				return err
			}
		}
	}
	s.emitEvents(ctx, evs...)
	return nil
}

func (s *Store) loadImages(ctx context.Context, arc *loadArchive) ([]*loadedImage, error) {
	var dm []dockerManifestEntry
	if b, ok := arc.files["manifest.json"]; ok {
		if err := json.Unmarshal(b, &dm); err != nil {
			return nil, fmt.Errorf("invalid archive: manifest.json: %v%.0w", err, errdefs.ErrInvalidArgument)
		}
	}
	if b, ok := arc.files[indexFile]; ok {
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
func (l *localStore) loadProgress(imgs []*loadedImage, out types.ProgressWriter) error {
	seen := map[digest.Digest]bool{}
	for _, im := range imgs {
		m, err := l.metaFor(im.rec)
		if err != nil {
			continue
		}
		for _, ld := range m.manifest.Layers {
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
func (s *Store) loadOCI(ctx context.Context, arc *loadArchive, idx *ocispec.Index, dm []dockerManifestEntry) ([]*loadedImage, error) {
	l := s.local
	tagsByConfig := map[string][]string{}
	for _, e := range dm {
		tagsByConfig[e.Config] = append(tagsByConfig[e.Config], e.RepoTags...)
	}
	byTarget := map[digest.Digest]*loadedImage{}
	var out []*loadedImage
	for _, desc := range idx.Manifests {
		if err := validateDigest(desc.Digest); err != nil {
			return nil, fmt.Errorf("invalid archive: index.json: %w", err)
		}
		if !l.hasBlob(desc.Digest) {
			return nil, fmt.Errorf("invalid archive: blob %s named by index.json is missing%.0w", desc.Digest, errdefs.ErrInvalidArgument)
		}
		manifest := desc
		if isIndexType(desc.MediaType) {
			var err error
			if manifest, err = l.pickManifest(desc.Digest, s.opts.Platform); err != nil {
				return nil, err
			}
		}
		rec, err := l.checkManifest(manifest)
		if err != nil {
			return nil, err
		}
		target := ocispec.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size}
		rec.Target = target
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
			if n, err := normaliseRefs([]string{t}, false); err == nil {
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
	for _, v := range []string{ann[annImageName], ann[annRefName]} {
		if v == "" {
			continue
		}
		if v == ann[annRefName] && !strings.ContainsAny(v, "/:") {
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
// (the first stored image manifest when none matches).
func (l *localStore) pickManifest(d digest.Digest, p ocispec.Platform) (ocispec.Descriptor, error) {
	idx, err := l.readIndex(d)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("invalid archive: %w%.0w", err, errdefs.ErrInvalidArgument)
	}
	var first *ocispec.Descriptor
	for i, m := range idx.Manifests {
		if isIndexType(m.MediaType) || !l.hasBlob(m.Digest) || m.Annotations[annotationRefType] == "attestation-manifest" {
			continue
		}
		if first == nil {
			first = &idx.Manifests[i]
		}
		if m.Platform != nil && platformMatches(p, *m.Platform) {
			return m, nil
		}
	}
	if first == nil {
		return ocispec.Descriptor{}, fmt.Errorf("invalid archive: index %s has no stored manifest%.0w", d, errdefs.ErrInvalidArgument)
	}
	return *first, nil
}

const annotationRefType = "vnd.docker.reference.type"

// checkManifest verifies that the manifest desc, its config and layers are
// stored and consistent, and returns the record to put.
func (l *localStore) checkManifest(desc ocispec.Descriptor) (*ImageRecord, error) {
	mb, err := l.readBlob(desc.Digest, maxManifestSize)
	if err != nil {
		return nil, fmt.Errorf("invalid archive: manifest %s: %w", desc.Digest, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(mb, &m); err != nil || validateDigest(m.Config.Digest) != nil {
		return nil, fmt.Errorf("invalid archive: manifest %s is not an image manifest%.0w", desc.Digest, errdefs.ErrInvalidArgument)
	}
	cb, err := l.readBlob(m.Config.Digest, maxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("invalid archive: config %s: %w", m.Config.Digest, err)
	}
	cfg, err := parseImageConfig(cb)
	if err != nil {
		return nil, fmt.Errorf("invalid archive: %w", err)
	}
	if len(cfg.RootFS.DiffIDs) != len(m.Layers) {
		return nil, fmt.Errorf("invalid archive: image %s has %d layers but %d diff IDs%.0w", m.Config.Digest, len(m.Layers), len(cfg.RootFS.DiffIDs), errdefs.ErrInvalidArgument)
	}
	for i, ld := range m.Layers {
		if !l.hasBlob(ld.Digest) {
			return nil, fmt.Errorf("invalid archive: layer %s is missing%.0w", ld.Digest, errdefs.ErrInvalidArgument)
		}
		if !isTarLayer(ld.MediaType) {
			continue // zstd, foreign layers: their DiffID is not checked here
		}
		_, diffID, err := l.layerDiffID(ld.Digest)
		if err != nil {
			return nil, fmt.Errorf("invalid archive: layer %s: %v%.0w", ld.Digest, err, errdefs.ErrInvalidArgument)
		}
		if diffID != cfg.RootFS.DiffIDs[i] {
			return nil, fmt.Errorf("invalid archive: layer %s has diff ID %s, config says %s%.0w", ld.Digest, diffID, cfg.RootFS.DiffIDs[i], errdefs.ErrInvalidArgument)
		}
	}
	md := ocispec.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size}
	if md.MediaType == "" {
		md.MediaType = m.MediaType
	}
	return &ImageRecord{ID: m.Config.Digest, Target: md, Manifest: md, RepoTags: []string{}, RepoDigests: []string{}}, nil
}

// loadDocker records the images of a docker-save manifest.json, building a
// Docker schema2 manifest for each.
func (s *Store) loadDocker(ctx context.Context, arc *loadArchive, dm []dockerManifestEntry) ([]*loadedImage, error) {
	l := s.local
	var out []*loadedImage
	for _, e := range dm {
		cb, err := l.archiveContent(arc, e.Config, maxConfigSize)
		if err != nil {
			return nil, err
		}
		cfg, err := parseImageConfig(cb)
		if err != nil {
			return nil, fmt.Errorf("invalid archive: %s: %w", e.Config, err)
		}
		if len(cfg.RootFS.DiffIDs) != len(e.Layers) {
			return nil, fmt.Errorf("invalid archive: %s has %d layers but %d diff IDs%.0w", e.Config, len(e.Layers), len(cfg.RootFS.DiffIDs), errdefs.ErrInvalidArgument)
		}
		var layers []ocispec.Descriptor
		for i, p := range e.Layers {
			d, err := l.archiveBlob(ctx, arc, p)
			if err != nil {
				return nil, err
			}
			mt, diffID, err := l.layerDiffID(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("invalid archive: layer %s: %w", p, err)
			}
			if diffID != cfg.RootFS.DiffIDs[i] {
				return nil, fmt.Errorf("invalid archive: layer %s has diff ID %s, config says %s%.0w", p, diffID, cfg.RootFS.DiffIDs[i], errdefs.ErrInvalidArgument)
			}
			layers = append(layers, ocispec.Descriptor{MediaType: mt, Digest: d.Digest, Size: d.Size})
		}
		rec, err := l.storeManifest(ctx, cb, layers, true)
		if err != nil {
			return nil, err
		}
		im := &loadedImage{rec: rec}
		for _, t := range e.RepoTags {
			n, err := normaliseRefs([]string{t}, false)
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
// by magic number) and the digest of its uncompressed content.
func (l *localStore) layerDiffID(d digest.Digest) (string, digest.Digest, error) {
	f, _, err := l.openBlob(d)
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
		in := &countingReader{r: f}
		gz, err := gzip.NewReader(in)
		if err != nil {
			return "", "", err
		}
		dg := digest.SHA256.Digester()
		if _, err := io.Copy(dg.Hash(), l.bombLimit.guard(in, gz)); err != nil {
			return "", "", err
		}
		return mediaTypeDockerLayerGzip, dg.Digest(), nil
	}
	return mediaTypeDockerLayer, d, nil
}

// isTarLayer reports whether mt is a plain or gzip tar layer, whose DiffID
// the load verifies.
func isTarLayer(mt string) bool {
	switch mt {
	case ocispec.MediaTypeImageLayer, ocispec.MediaTypeImageLayerGzip, mediaTypeDockerLayer, mediaTypeDockerLayerGzip:
		return true
	}
	return false
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
