package graph

import (
	"context"
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
)

// Size caps for metadata read from the store or from archives.
const (
	// maxManifestSize is containerd's and distribution's 4 MiB limit on
	// manifests and indexes: real ones are a few KiB.
	maxManifestSize = 4 << 20
	// maxConfigSize caps an image config at 8 MiB: configs with long
	// histories reach a few hundred KiB.
	maxConfigSize = 8 << 20
)

// imageMeta is what the store derives from an image's (immutable) manifest
// and config; cached per manifest digest (a manifest names one config).
type imageMeta struct {
	manifest ocispec.Manifest
	rawCfg   []byte
	cfg      *imageConfig
	size     int64 // sum of the compressed layer sizes
}

// metaFor loads (or returns the cached) manifest and config of rec.
func (l *localStore) metaFor(rec *ImageRecord) (*imageMeta, error) {
	l.metaMu.Lock()
	m, ok := l.meta[rec.Manifest.Digest]
	l.metaMu.Unlock()
	if ok {
		return m, nil
	}
	mb, err := l.readBlob(rec.Manifest.Digest, maxManifestSize)
	if err != nil {
		return nil, fmt.Errorf("image %s: manifest: %w", rec.ID, err)
	}
	m = &imageMeta{}
	if err := json.Unmarshal(mb, &m.manifest); err != nil {
		return nil, fmt.Errorf("image %s: parse manifest %s: %w", rec.ID, rec.Manifest.Digest, err)
	}
	if m.manifest.Config.Digest != rec.ID {
		return nil, fmt.Errorf("image %s: manifest %s names config %s", rec.ID, rec.Manifest.Digest, m.manifest.Config.Digest)
	}
	m.rawCfg, err = l.readBlob(rec.ID, maxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", rec.ID, err)
	}
	m.cfg, err = parseImageConfig(m.rawCfg)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", rec.ID, err)
	}
	for _, ld := range m.manifest.Layers {
		m.size += ld.Size
	}
	l.metaMu.Lock()
	l.meta[rec.Manifest.Digest] = m
	l.metaMu.Unlock()
	return m, nil
}

// PutImage records img and points its RepoTags and RepoDigests at it (moving
// them from any other image, which becomes dangling when it loses its last
// reference). Every blob it names must already be stored.
func (s *Store) PutImage(ctx context.Context, img ImageRecord) error {
	return s.local.putImage(img)
}

func (l *localStore) putImage(img ImageRecord) error {
	if err := validateDigest(img.ID); err != nil {
		return fmt.Errorf("put image: %w", err)
	}
	if err := validateDigest(img.Manifest.Digest); err != nil {
		return fmt.Errorf("put image %s: manifest: %w", img.ID, err)
	}
	if img.Target.Digest == "" {
		img.Target = img.Manifest
	}
	if err := validateDigest(img.Target.Digest); err != nil {
		return fmt.Errorf("put image %s: target: %w", img.ID, err)
	}
	tags, err := normaliseRefs(img.RepoTags, false)
	if err != nil {
		return err
	}
	digs, err := normaliseRefs(img.RepoDigests, true)
	if err != nil {
		return err
	}
	for _, d := range []digest.Digest{img.Target.Digest, img.Manifest.Digest, img.ID} {
		if !l.hasBlob(d) {
			return fmt.Errorf("put image %s: blob %s not stored%.0w", img.ID, d, errdefs.ErrNotFound)
		}
	}
	meta, err := l.metaFor(&img)
	if err != nil {
		return err
	}
	for _, ld := range meta.manifest.Layers {
		if !l.hasBlob(ld.Digest) {
			return fmt.Errorf("put image %s: layer %s not stored%.0w", img.ID, ld.Digest, errdefs.ErrNotFound)
		}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	rec := l.images[img.ID]
	if rec == nil {
		rec = &ImageRecord{ID: img.ID, RepoTags: []string{}, RepoDigests: []string{}, Created: img.Created}
		if rec.Created.IsZero() {
			rec.Created = time.Now().UTC()
		}
	}
	rec.Target = img.Target
	rec.Manifest = img.Manifest
	if img.LastTagTime.After(rec.LastTagTime) {
		rec.LastTagTime = img.LastTagTime
	}
	l.images[img.ID] = rec
	for _, ref := range append(tags, digs...) {
		l.pointRef(ref, img.ID)
	}
	l.reindex()
	return l.persist()
}

// pointRef makes ref (fully qualified) name image id, taking it from any
// other image. Called with mu held for writing; the caller reindexes.
func (l *localStore) pointRef(ref string, id digest.Digest) {
	if other, ok := l.refs[ref]; ok && other != id {
		if o := l.images[other]; o != nil {
			o.RepoTags = slices.DeleteFunc(o.RepoTags, func(s string) bool { return s == ref })
			o.RepoDigests = slices.DeleteFunc(o.RepoDigests, func(s string) bool { return s == ref })
		}
	}
	rec := l.images[id]
	l.refs[ref] = id
	if strings.Contains(ref, "@") {
		if !slices.Contains(rec.RepoDigests, ref) {
			rec.RepoDigests = append(rec.RepoDigests, ref)
			sort.Strings(rec.RepoDigests)
		}
		return
	}
	if !slices.Contains(rec.RepoTags, ref) {
		rec.RepoTags = append(rec.RepoTags, ref)
		sort.Strings(rec.RepoTags)
	}
}

// dropRef removes ref from the image it names. Called with mu held for
// writing; the caller reindexes and persists.
func (l *localStore) dropRef(ref string) {
	id, ok := l.refs[ref]
	if !ok {
		return
	}
	delete(l.refs, ref)
	if r := l.images[id]; r != nil {
		r.RepoTags = slices.DeleteFunc(r.RepoTags, func(s string) bool { return s == ref })
		r.RepoDigests = slices.DeleteFunc(r.RepoDigests, func(s string) bool { return s == ref })
	}
}

// normaliseRefs parses refs and returns their fully qualified strings;
// canonical=true requires name@digest, false requires name:tag (a bare name
// gets :latest).
func normaliseRefs(refs []string, canonical bool) ([]string, error) {
	out := make([]string, 0, len(refs))
	for _, s := range refs {
		n, err := reference.ParseNormalizedNamed(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %v%.0w", s, err, errdefs.ErrInvalidArgument)
		}
		if canonical {
			c, ok := n.(reference.Canonical)
			if !ok {
				return nil, fmt.Errorf("%s: not a digest reference%.0w", s, errdefs.ErrInvalidArgument)
			}
			if _, tagged := n.(reference.Tagged); tagged {
				c, _ = reference.WithDigest(reference.TrimNamed(n), c.Digest())
			}
			out = append(out, c.String())
			continue
		}
		if _, ok := n.(reference.Canonical); ok {
			return nil, fmt.Errorf("%s: a digest reference is not a tag%.0w", s, errdefs.ErrInvalidArgument)
		}
		out = append(out, reference.TagNameOnly(n).String())
	}
	return out, nil
}

// ImagesByRepository returns the images tagged in repository (fully
// qualified name) with their tags, for push.
func (s *Store) ImagesByRepository(ctx context.Context, repo string) (map[string]*ImageRecord, error) {
	named, err := reference.ParseNormalizedNamed(repo)
	if err != nil {
		return nil, fmt.Errorf("%v%.0w", err, errdefs.ErrInvalidArgument)
	}
	name := named.Name()
	out := map[string]*ImageRecord{}
	s.local.mu.RLock()
	defer s.local.mu.RUnlock()
	for _, r := range s.local.images {
		for _, t := range r.RepoTags {
			n, err := reference.ParseNormalizedNamed(t)
			if err != nil {
				continue
			}
			if nt, ok := n.(reference.NamedTagged); ok && n.Name() == name {
				out[nt.Tag()] = cloneRecord(r)
			}
		}
	}
	return out, nil
}

// Count returns the number of images (for /info).
func (s *Store) Count() int {
	s.local.mu.RLock()
	defer s.local.mu.RUnlock()
	return len(s.local.images)
}

func cloneRecord(r *ImageRecord) *ImageRecord {
	c := *r
	c.RepoTags = append([]string{}, r.RepoTags...)
	c.RepoDigests = append([]string{}, r.RepoDigests...)
	return &c
}

// familiarRefs converts fully qualified references to their familiar form.
func familiarRefs(refs []string) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, familiar(r))
	}
	return out
}

func familiar(ref string) string {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	return reference.FamiliarString(n)
}

// blobsOf lists the blobs that rec keeps alive: its target (and, for an
// index, the stored child manifests with their configs and layers), its
// manifest, config and layers.
func (l *localStore) blobsOf(rec *ImageRecord) []digest.Digest {
	out := []digest.Digest{rec.Target.Digest, rec.Manifest.Digest, rec.ID}
	if m, err := l.metaFor(rec); err == nil {
		for _, ld := range m.manifest.Layers {
			out = append(out, ld.Digest)
		}
	}
	if isIndexType(rec.Target.MediaType) {
		out = append(out, l.indexChildren(rec.Target.Digest)...)
	}
	return out
}

// indexChildren lists the stored blobs reachable from the index d (one level
// of manifests, their configs and layers).
func (l *localStore) indexChildren(d digest.Digest) []digest.Digest {
	b, err := l.readBlob(d, maxManifestSize)
	if err != nil {
		return nil
	}
	var idx ocispec.Index
	if json.Unmarshal(b, &idx) != nil {
		return nil
	}
	var out []digest.Digest
	for _, m := range idx.Manifests {
		if !l.hasBlob(m.Digest) {
			continue
		}
		out = append(out, m.Digest)
		mb, err := l.readBlob(m.Digest, maxManifestSize)
		if err != nil {
			continue
		}
		var man ocispec.Manifest
		if json.Unmarshal(mb, &man) != nil {
			continue
		}
		out = append(out, man.Config.Digest)
		for _, ld := range man.Layers {
			out = append(out, ld.Digest)
		}
	}
	return out
}

// collectGarbage removes those of candidates that no remaining record keeps
// alive and returns the bytes freed. Called with mu held for writing.
// Only the blobs of images just deleted are candidates, never the whole
// blobs/ directory: a pull writes its blobs before it records the image, and
// a full sweep would delete them under its feet.
func (l *localStore) collectGarbage(candidates []digest.Digest) int64 {
	if len(candidates) == 0 {
		return 0
	}
	live := map[digest.Digest]bool{}
	for _, r := range l.images {
		for _, d := range l.blobsOf(r) {
			live[d] = true
		}
	}
	var freed int64
	seen := map[digest.Digest]bool{}
	for _, d := range candidates {
		if live[d] || seen[d] || d == "" {
			continue
		}
		seen[d] = true
		n, err := l.removeBlob(d)
		if err != nil {
			l.log.WithError(err).WithField("digest", d).Warn("remove unreferenced blob")
			continue
		}
		// The metadata cache holds one entry per manifest: dropping it with
		// the blob keeps the cache no larger than the store (without this a
		// pull/rmi loop grew it for the daemon's lifetime).
		l.metaMu.Lock()
		delete(l.meta, d)
		l.metaMu.Unlock()
		freed += n
	}
	return freed
}

func isIndexType(mt string) bool {
	return mt == ocispec.MediaTypeImageIndex || mt == mediaTypeDockerManifestList
}

const (
	mediaTypeDockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json"
	mediaTypeDockerManifest     = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerConfig       = "application/vnd.docker.container.image.v1+json"
	mediaTypeDockerLayer        = "application/vnd.docker.image.rootfs.diff.tar"
	mediaTypeDockerLayerGzip    = "application/vnd.docker.image.rootfs.diff.tar.gzip"
)
