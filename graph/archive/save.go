package archive

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/internal/ocilayout"
)

// dockerManifestEntry is one entry of a docker save manifest.json.
type dockerManifestEntry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// savedImage is one image of an export with the references to record.
type savedImage struct {
	rec  *store.ImageRecord // seen as its primary saved platform
	orig *store.ImageRecord // as recorded (what the lease pins)
	meta *store.ImageMeta
	tags []string // fully qualified name:tag
	// multi: the platforms saved under the image's index target, when
	// more than one (nil: the one manifest rec names is saved).
	multi []store.PlatformImage
}

// ExportImage writes names as one tar that both `docker load` and OCI tools
// read: an OCI layout (oci-layout, index.json, blobs/sha256/…) plus docker's
// manifest.json and, when a name is tagged, repositories. platforms (API
// 1.48; several at 1.52) choose the present platforms saved; none means
// every present one, as Engine 29 saves. An image saved with one platform
// is saved by its platform manifest (its index is not carried, nor its
// RepoDigests); with several, index.json names the image's index and the
// tar holds the index and those platforms' blobs (the index's other
// entries are absent, as in Engine 29's save), and manifest.json has the
// entry of the one the daemon's platform runs best. Every name is resolved
// before the first byte is written, so a missing one is a plain NotFound.
func (s *Archiver) ExportImage(ctx context.Context, names []string, platforms []ocispec.Platform, w io.Writer) error {
	imgs, err := s.resolveExport(names, platforms)
	if err != nil {
		return err
	}
	// Pinned for the whole write: an rmi during a long save must not
	// remove a layer that is still to be written.
	lease := s.st.NewLease()
	defer lease.Release()
	for _, im := range imgs {
		if err := lease.AddImage(im.orig); err != nil {
			return err
		}
	}
	tw := ocilayout.NewWriter(w, time.Unix(0, 0).UTC(), tar.FormatUnknown)
	for _, dir := range []string{ocilayout.BlobsDir + "/", ocilayout.BlobsDir + "/sha256/"} {
		if err := tw.Dir(dir); err != nil {
			return err
		}
	}
	written := map[digest.Digest]bool{}
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}}
	var dm []dockerManifestEntry
	repos := map[string]map[string]string{}
	for _, im := range imgs {
		m := im.meta.Manifest
		blobs := append([]ocispec.Descriptor{m.Config}, m.Layers...)
		blobs = append(blobs, im.rec.Manifest)
		for _, p := range im.multi {
			pm, err := s.st.Meta(im.rec.View(p))
			if err != nil {
				return err
			}
			blobs = append(blobs, pm.Manifest.Config)
			blobs = append(blobs, pm.Manifest.Layers...)
			blobs = append(blobs, p.Manifest)
		}
		if im.multi != nil {
			blobs = append(blobs, im.rec.Target)
		}
		for _, b := range blobs {
			if written[b.Digest] {
				continue
			}
			if err := s.writeTarBlob(ctx, tw, b.Digest); err != nil {
				return err
			}
			written[b.Digest] = true
		}
		desc := ocispec.Descriptor{MediaType: im.rec.Manifest.MediaType, Digest: im.rec.Manifest.Digest, Size: im.rec.Manifest.Size}
		p := im.meta.Config.Platform
		if p.OS != "" {
			desc.Platform = &ocispec.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant, OSVersion: p.OSVersion}
		}
		if im.multi != nil {
			desc = ocispec.Descriptor{MediaType: im.rec.Target.MediaType, Digest: im.rec.Target.Digest, Size: im.rec.Target.Size}
		}
		entry := dockerManifestEntry{Config: blobTarPath(m.Config.Digest), RepoTags: []string{}}
		for _, l := range m.Layers {
			entry.Layers = append(entry.Layers, blobTarPath(l.Digest))
		}
		if len(im.tags) == 0 {
			idx.Manifests = append(idx.Manifests, desc)
		}
		for _, t := range im.tags {
			n, err := reference.ParseNormalizedNamed(t)
			if err != nil {
				continue
			}
			tagged, ok := n.(reference.NamedTagged)
			if !ok {
				continue
			}
			d := desc
			d.Annotations = map[string]string{store.AnnImageName: t, store.AnnRefName: tagged.Tag()}
			idx.Manifests = append(idx.Manifests, d)
			entry.RepoTags = append(entry.RepoTags, reference.FamiliarString(n))
			if len(m.Layers) > 0 {
				repo := reference.FamiliarName(n)
				if repos[repo] == nil {
					repos[repo] = map[string]string{}
				}
				repos[repo][tagged.Tag()] = m.Layers[len(m.Layers)-1].Digest.Encoded()
			}
		}
		dm = append(dm, entry)
	}
	if err := tw.Layout(); err != nil {
		return err
	}
	if err := tw.Index(idx); err != nil {
		return err
	}
	if err := tw.JSON("manifest.json", dm); err != nil {
		return err
	}
	if len(repos) > 0 {
		if err := tw.JSON("repositories", repos); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	var evs []store.Event
	for _, im := range imgs {
		evs = append(evs, store.NewEvent(im.rec.ID.String(), events.ActionSave, im.rec.ID.String(), im.meta.Config.Config.Labels))
	}
	store.Emit(ctx, s.events, evs...)
	return nil
}

func blobTarPath(d digest.Digest) string { return ocilayout.BlobPath(d) }

func (s *Archiver) writeTarBlob(ctx context.Context, tw *ocilayout.Writer, d digest.Digest) error {
	f, size, err := s.st.OpenBlob(d)
	if err != nil {
		return err
	}
	defer f.Close()
	return tw.Blob(ctx, d, size, f)
}

// resolveExport maps names to images: a bare repository name means all its
// tags (as docker save does), name:tag that tag, an ID the image untagged.
func (s *Archiver) resolveExport(names []string, platforms []ocispec.Platform) ([]*savedImage, error) {
	var out []*savedImage
	byID := map[digest.Digest]*savedImage{}
	add := func(rec *store.ImageRecord, tag string) error {
		im := byID[rec.ID]
		if im == nil {
			name := tag
			if name == "" {
				name = rec.ID.String()
			}
			sel, err := s.st.SelectPlatforms(rec, store.Familiar(name), platforms)
			if err != nil {
				return err
			}
			im = &savedImage{rec: rec.View(sel[0]), orig: rec}
			if len(sel) > 1 {
				im.multi = sel
				for _, p := range sel {
					if p.Manifest.Digest == rec.Manifest.Digest {
						im.rec = rec // the primary, when saved
					}
				}
			}
			if im.meta, err = s.st.Meta(im.rec); err != nil {
				return err
			}
			byID[rec.ID] = im
			out = append(out, im)
		}
		if tag != "" {
			for _, t := range im.tags {
				if t == tag {
					return nil
				}
			}
			im.tags = append(im.tags, tag)
		}
		return nil
	}
	for _, name := range names {
		if n, err := reference.ParseNormalizedNamed(name); err == nil && reference.IsNameOnly(n) {
			recs, _ := s.st.ImagesByRepository(n.Name())
			if len(recs) > 0 {
				for tag, rec := range recs {
					if err := add(rec, n.Name()+":"+tag); err != nil {
						return nil, err
					}
				}
				continue
			}
		}
		rec, err := s.st.Lookup(name)
		if err != nil {
			if errdefs.IsNotFound(err) {
				// docker save names the image as given.
				return nil, store.NoSuchImage(name)
			}
			return nil, err
		}
		tag := ""
		if n, err := reference.ParseNormalizedNamed(name); err == nil && !looksLikeID(name) {
			if _, canonical := n.(reference.Canonical); !canonical {
				full := reference.TagNameOnly(n).String()
				for _, t := range rec.RepoTags {
					if t == full {
						tag = full
					}
				}
			}
		}
		if err := add(rec, tag); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no images to save%.0w", errdefs.ErrInvalidArgument)
	}
	return out, nil
}

// looksLikeID reports whether name could be an image ID or a prefix of one.
func looksLikeID(name string) bool {
	p := strings.TrimPrefix(name, "sha256:")
	return p != "" && len(p) <= 64 && strings.Trim(p, "0123456789abcdef") == ""
}
