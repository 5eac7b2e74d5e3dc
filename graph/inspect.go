package graph

import (
	"context"
	"encoding/json"
	"time"

	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/storage"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/imagespec"
)

// graphDriverName is what the local-only GraphDriver field reports: wharf
// keeps no unpacked layers, only the OCI layout, so it names that and its
// root rather than pretending to be overlay2.
const graphDriverName = "oci-layout"

// BuildInspect builds the ImageInspect of an image; local and remote inspect
// both call it, so the two agree field for field. GraphDriver and Manifests
// are local-only and left for the caller.
func BuildInspect(src InspectSource) (*types.ImageInspect, error) {
	base, err := configInspect(src.Config)
	if err != nil {
		return nil, err
	}
	return fillInspect(base, src), nil
}

// configInspect is the part of an ImageInspect that the image config alone
// determines (inspectCache keeps it by config digest).
func configInspect(config []byte) (*types.ImageInspect, error) {
	cfg, err := store.ParseImageConfig(config)
	if err != nil {
		return nil, err
	}
	out := &types.ImageInspect{}
	r := &out.InspectResponse
	r.Comment = cfg.Comment
	if r.Comment == "" && len(cfg.History) > 0 {
		// Docker puts an import's message both at top level and in the
		// history; OCI configs only have the latter.
		r.Comment = cfg.History[len(cfg.History)-1].Comment
	}
	// moby sends Created whenever the config has the field, a zero time
	// included ("0001-01-01T00:00:00Z": every crane and ko image says so);
	// only a config without it leaves it out. go-containerregistry's
	// daemon.Image fails on an empty one.
	if cfg.Created != nil {
		r.Created = cfg.Created.Format(time.RFC3339Nano)
	}
	r.Author = cfg.Author
	conf := cfg.Config
	r.Config = &conf
	r.Architecture = cfg.Architecture
	r.Variant = cfg.Variant
	r.Os = cfg.OS
	r.OsVersion = cfg.OSVersion
	r.RootFS = image.RootFS{Type: cfg.RootFS.Type}
	if r.RootFS.Type == "" {
		r.RootFS.Type = "layers"
	}
	for _, d := range cfg.RootFS.DiffIDs {
		r.RootFS.Layers = append(r.RootFS.Layers, d.String())
	}
	out.Legacy = types.LegacyImageFields{
		Parent:          cfg.Parent,
		DockerVersion:   cfg.DockerVersion,
		Container:       cfg.Container,
		ContainerConfig: cfg.ContainerConfig,
	}
	return out, nil
}

// fillInspect copies base (which it does not modify: it may be shared) and
// adds what src knows beyond the config: the ID it names, references, size,
// descriptor and last tag time.
func fillInspect(base *types.ImageInspect, src InspectSource) *types.ImageInspect {
	out := *base
	r := &out.InspectResponse
	id := src.ID
	if id == "" {
		id = digest.FromBytes(src.Config)
	}
	r.ID = id.String()
	r.RepoTags = nonNil(append([]string{}, src.RepoTags...))
	r.RepoDigests = nonNil(append([]string{}, src.RepoDigests...))
	r.Size = 0
	for _, l := range src.Layers {
		r.Size += l.Size
	}
	r.Descriptor = nil
	if src.Descriptor != nil {
		d := *src.Descriptor
		d.Data = nil
		r.Descriptor = &d
	}
	r.Metadata = image.Metadata{LastTagTime: src.LastTagTime}
	return &out
}

// ImageInspect answers GET /images/{name}/json for a local image.
func (s *Service) ImageInspect(ctx context.Context, name string, opts types.InspectOptions) (*types.ImageInspect, error) {
	rec, _, meta, err := s.lookupView(name, opts.Platform)
	if err != nil {
		return nil, err
	}
	target := rec.Target
	out, err := BuildInspect(InspectSource{
		ID:          meta.Manifest.Config.Digest,
		Config:      meta.RawConfig,
		Descriptor:  &target,
		Layers:      meta.Manifest.Layers,
		RepoTags:    store.FamiliarRefs(rec.RepoTags),
		RepoDigests: store.FamiliarRefs(rec.RepoDigests),
		LastTagTime: rec.LastTagTime,
	})
	if err != nil {
		return nil, err
	}
	out.GraphDriver = &storage.DriverData{Name: graphDriverName, Data: map[string]string{"Root": s.images.Root()}}
	if opts.Manifests {
		out.Manifests = s.manifestSummaries(rec)
	}
	// The verdict the image was pulled under; Identity adds the
	// repositories it was pulled from or pushed to (API 1.53).
	out.Trust, out.Identity = rec.Trust, types.ImageIdentity(rec.Trust, rec.RepoDigests)
	return out, nil
}

// manifestSummaries lists the manifests of rec's target (API ≥ 1.48
// manifests=1): the index entries when the target is an index, else the one
// manifest. Available means the manifest, its config and layers are stored.
func (s *Service) manifestSummaries(rec *ImageRecord) []image.ManifestSummary {
	l := s.images
	var descs []ocispec.Descriptor
	if imagespec.IsIndex(rec.Target.MediaType) {
		if idx, err := l.ReadIndex(rec.Target.Digest); err == nil {
			descs = idx.Manifests
		}
	}
	if len(descs) == 0 {
		d := rec.Manifest
		if d.Platform == nil {
			if m, err := l.Meta(rec); err == nil {
				p := m.Config.Platform
				d.Platform = &p
			}
		}
		descs = []ocispec.Descriptor{d}
	}
	present := map[digest.Digest]bool{}
	for _, p := range rec.Present() {
		present[p.Manifest.Digest] = true
	}
	out := []image.ManifestSummary{}
	for _, d := range descs {
		ms := image.ManifestSummary{ID: d.Digest.String(), Descriptor: d, Kind: image.ManifestKindImage}
		if imagespec.IsAttestation(d) {
			ms.Kind = image.ManifestKindAttestation
			ms.AttestationData = &image.AttestationProperties{For: digest.Digest(d.Annotations[imagespec.AnnotationReferenceDigest])}
		} else if d.Platform == nil && imagespec.IsIndex(d.MediaType) {
			ms.Kind = image.ManifestKindUnknown
		}
		ms.Available = true
		var content int64
		mb, err := l.ReadBlob(d.Digest, store.MaxManifestSize)
		if err != nil {
			ms.Available = false
		} else {
			content += int64(len(mb))
			var man ocispec.Manifest
			if json.Unmarshal(mb, &man) == nil {
				for _, b := range append([]ocispec.Descriptor{man.Config}, man.Layers...) {
					if n := l.BlobSize(b.Digest); n >= 0 {
						content += n
					} else {
						ms.Available = false
					}
				}
			}
		}
		if ms.Kind == image.ManifestKindImage && !present[d.Digest] {
			// Stored, maybe, but not a platform of this image (the record
			// says what is present; rmi --platform removed it, or another
			// image holds it).
			ms.Available = false
		}
		ms.Size.Content = content
		ms.Size.Total = content
		if ms.Kind == image.ManifestKindImage {
			props := &image.ImageProperties{Containers: []string{}}
			if d.Platform != nil {
				props.Platform = *d.Platform
			}
			ms.ImageData = props
		}
		out = append(out, ms)
	}
	return out
}
