package distribution

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry"
)

// PullTarget is what a pull of a name would fetch: the platform manifest
// its resolution chooses, with the config and layer descriptors it lists.
// Nothing of the config or the layers is read.
type PullTarget struct {
	// Ref is the repository that answered, with the tag or digest resolved.
	Ref reference.Named
	// Top is the top level the name resolves to; Manifest the platform
	// manifest chosen (Top itself for a single-platform image).
	Top, Manifest ocispec.Descriptor
	// Platform is the platform asked for (the daemon's unless given).
	Platform ocispec.Platform
	Config   ocispec.Descriptor
	Layers   []ocispec.Descriptor
}

// PullTarget resolves name as a pull does (registry.Service.FindImage: the
// same candidates, credentials and platform choice) and returns the chosen
// manifest's descriptors without reading the config or a layer.
//
// Cost, the resolution's own: a tag on a repository this identity read
// before is one HEAD, then the manifest from the content cache or one GET
// by digest; a repository not read before is one GET of the tag. An index
// adds its platform manifest by digest (none when cached): a cold
// multi-platform tag is two GETs, a warm unchanged one a HEAD alone.
func (s *Service) PullTarget(ctx context.Context, name string, opts types.PullCostOptions) (*PullTarget, error) {
	svc, err := s.registryService()
	if err != nil {
		return nil, err
	}
	res, err := findByName(ctx, svc, name, credentials(opts.Auth, opts.Registries, opts.MetaHeaders))
	if err != nil {
		return nil, noSuchImage(name, err)
	}
	if res.V1() {
		return nil, fmt.Errorf("%s: schema1 and v1 images are not pulled: no pull cost%.0w", name, errdefs.ErrNotImplemented)
	}
	platform := s.platformOr(opts.Platform)
	choice, err := res.Choose(ctx, platform)
	if err != nil {
		return nil, noSuchImage(name, err)
	}
	mt := choice.Descriptor.MediaType
	if mt == "" {
		mt = imagespec.Sniff(choice.Raw)
	}
	if imagespec.IsSchema1(mt) {
		return nil, fmt.Errorf("%s: schema1 manifests are not pulled: no pull cost%.0w", name, errdefs.ErrNotImplemented)
	}
	// The bytes were read within the registry's document cap and checked
	// against their digest by the resolution.
	m, err := pullManifest(choice.Raw)
	if err != nil {
		return nil, fmt.Errorf("registry %s: manifest %s: %w", res.Registry, choice.Descriptor.Digest, err)
	}
	return &PullTarget{
		Ref:      res.Ref(),
		Top:      res.Descriptor,
		Manifest: choice.Descriptor,
		Platform: platform,
		Config:   m.Config,
		Layers:   m.Layers,
	}, nil
}

// pullManifest reads a platform manifest's config and layer descriptors:
// every digest valid, every size not negative (a size feeds the cost's
// sum), else registry.ErrUpstream.
func pullManifest(raw []byte) (ocispec.Manifest, error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%v%.0w", err, registry.ErrUpstream)
	}
	if m.Config.Digest == "" {
		return m, fmt.Errorf("no config descriptor%.0w", registry.ErrUpstream)
	}
	for _, d := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
		if d.Digest.Validate() != nil || d.Size < 0 {
			return m, fmt.Errorf("an invalid descriptor %q (size %d)%.0w", d.Digest, d.Size, registry.ErrUpstream)
		}
	}
	return m, nil
}
