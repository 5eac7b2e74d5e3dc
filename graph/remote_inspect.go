package graph

import (
	"context"
	"encoding/json"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/imagespec"
)

// LookupRemote answers a remote inspect: the image's metadata from its
// registry, built by BuildInspect exactly as a local inspect is, plus where
// the answer came from. No layer is downloaded.
//
// RepoTags and RepoDigests mirror what the local store shows for the same
// image after a push or pull of that one name: [name:tag] (only when a tag
// was resolved) and [name@top-level digest], in familiar form.
func (s *Service) LookupRemote(ctx context.Context, name string, opts types.RemoteInspectOptions) (*types.RemoteImageInspect, error) {
	ans, err := s.dist.InspectRemote(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	ri := ans.Image
	// ri.Config.Digest is the digest of ri.ConfigBytes (verified by the
	// registry client; computed from them for schema1), read in the caller's
	// own authorised scope: see inspectCache.
	insp, err := s.inspects.buildInspect(remoteInspectSource(ans), ri.Config.Digest)
	if err != nil {
		return nil, err
	}
	out := &types.RemoteImageInspect{
		ImageInspect:           *insp,
		Registry:               ri.Registry,
		ServedBy:               ri.ServedBy,
		Digest:                 ri.Descriptor.Digest.String(),
		Tag:                    ri.Tag,
		PlatformManifestDigest: ri.Manifest.Digest.String(),
		ManifestAnnotations:    ri.Annotations,
		Referrers:              ans.Referrers,
		RateLimit:              ans.RateLimit,
	}
	out.Trust = ans.Trust
	out.BaseName, out.BaseDigest, out.BaseSource = baseOf(ri.Annotations, insp)
	if out.PlatformManifestDigest == "" {
		out.PlatformManifestDigest = out.Digest
	}
	// The registry has none of the local-only state.
	out.GraphDriver = nil
	if opts.Manifests {
		out.Manifests = remoteManifestSummaries(ans)
	}
	// Identity as the local store would show it after a pull of this name
	// (RepoDigests mirror that too): the verdict's signatures and the
	// repository.
	out.Identity = types.ImageIdentity(out.Trust, out.RepoDigests)

	actor := out.ID
	if actor == "" {
		actor = remoteRefString(ans)
	}
	store.Emit(ctx, s.opts.Events, store.Event{Actor: actor, Action: events.Action("inspect"), Attrs: map[string]string{
		"name":     remoteRefString(ans),
		"registry": ri.Registry,
		"digest":   out.Digest,
	}})
	return out, nil
}

// baseOf is the base an image names (org.opencontainers.image.base.name
// and .digest): its manifest's annotations, else its config's labels, as
// the update check reads them (graph/updates, imageBase); both keys or
// nothing.
func baseOf(annotations map[string]string, insp *types.ImageInspect) (name, dgst, source string) {
	pick := func(kv map[string]string) bool {
		name, dgst = kv[types.AnnotationBaseName], kv[types.AnnotationBaseDigest]
		return name != "" && dgst != ""
	}
	if pick(annotations) {
		return name, dgst, "annotations"
	}
	if insp.Config != nil && pick(insp.Config.Labels) {
		return name, dgst, "labels"
	}
	return "", "", ""
}

// remoteInspectSource fills the InspectSource the way the local store does
// for the same image.
func remoteInspectSource(ans *distribution.RemoteInspect) InspectSource {
	ri := ans.Image
	src := InspectSource{
		ID:         ri.Config.Digest,
		Config:     ri.ConfigBytes,
		Descriptor: &ocispec.Descriptor{MediaType: ri.Descriptor.MediaType, Digest: ri.Descriptor.Digest, Size: ri.Descriptor.Size},
		Layers:     ri.Layers,
	}
	if ri.V1 {
		src.ID = v1ImageID(ri.ConfigBytes, ri.Config.Digest)
	}
	if ri.Name != nil {
		repo := reference.TrimNamed(ri.Name)
		if ri.Tag != "" {
			if t, err := reference.WithTag(repo, ri.Tag); err == nil {
				src.RepoTags = []string{reference.FamiliarString(t)}
			}
		}
		if ri.Descriptor.Digest != "" {
			if c, err := reference.WithDigest(repo, ri.Descriptor.Digest); err == nil {
				src.RepoDigests = []string{reference.FamiliarString(c)}
			}
		}
	}
	return src
}

// v1ImageID is the id a v1 registry or a schema1 v1Compatibility record
// gives the image (64 hex digits), as a sha256 digest; fallback when absent.
func v1ImageID(v1Compat []byte, fallback digest.Digest) digest.Digest {
	var rec struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(v1Compat, &rec) == nil && rec.ID != "" {
		d := digest.NewDigestFromEncoded(digest.SHA256, rec.ID)
		if d.Validate() == nil {
			return d
		}
	}
	if fallback == "" && len(v1Compat) > 0 {
		return digest.FromBytes(v1Compat)
	}
	return fallback
}

// remoteRefString is the familiar name:tag or name@digest that was inspected.
func remoteRefString(ans *distribution.RemoteInspect) string {
	ri := ans.Image
	if ri.Name == nil {
		return ri.Descriptor.Digest.String()
	}
	repo := reference.TrimNamed(ri.Name)
	if ri.Tag != "" {
		if t, err := reference.WithTag(repo, ri.Tag); err == nil {
			return reference.FamiliarString(t)
		}
	}
	if c, err := reference.WithDigest(repo, ri.Descriptor.Digest); err == nil {
		return reference.FamiliarString(c)
	}
	return reference.FamiliarName(repo)
}

// remoteManifestSummaries lists every manifest of the image as the
// Manifests field of a local inspect does; nothing is available locally.
// A single-platform image is its own one entry.
func remoteManifestSummaries(ans *distribution.RemoteInspect) []image.ManifestSummary {
	ri := ans.Image
	if ri.Index == nil {
		d := ri.Descriptor
		if d.Platform == nil {
			if p := imagespec.ConfigPlatform(ri.ConfigBytes); p != nil {
				d.Platform = p
			}
		}
		return []image.ManifestSummary{manifestSummary(d)}
	}
	out := make([]image.ManifestSummary, 0, len(ri.Index.Manifests))
	for _, d := range ri.Index.Manifests {
		out = append(out, manifestSummary(d))
	}
	return out
}

func manifestSummary(d ocispec.Descriptor) image.ManifestSummary {
	ms := image.ManifestSummary{
		ID:         d.Digest.String(),
		Descriptor: d,
		Available:  false,
		Kind:       image.ManifestKindImage,
	}
	ms.Size.Content = d.Size
	ms.Size.Total = d.Size
	if imagespec.IsAttestation(d) {
		ms.Kind = image.ManifestKindAttestation
		ms.AttestationData = &image.AttestationProperties{For: digest.Digest(d.Annotations[imagespec.AnnotationReferenceDigest])}
		return ms
	}
	if d.Platform != nil {
		ms.ImageData = &image.ImageProperties{Platform: *d.Platform, Containers: []string{}}
	}
	return ms
}
