package graph

import (
	"context"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/packages"
)

// ImagePackages lists the packages of an image, local or remote
// (graph/packages), resolved as ls and cat resolve it: from an SBOM
// attestation attached to it when there is one (and the signature policy
// accepts the image), otherwise from its package databases and binaries.
func (s *Service) ImagePackages(ctx context.Context, name string, opts types.PackagesOptions) (*types.ImagePackages, error) {
	img, err := s.contentsImage(ctx, name, types.FilesOptions{
		Platform: opts.Platform, Remote: opts.Remote,
		Auth: opts.Auth, Registries: opts.Registries, MetaHeaders: opts.MetaHeaders,
	})
	if err != nil {
		return nil, err
	}
	out, err := packages.FromAttestation(ctx, s.attestations(), name, opts)
	if err != nil {
		return nil, err
	}
	if out == nil {
		if out, err = packages.OfImage(ctx, s.contents, img); err != nil {
			return nil, err
		}
	}
	out.Image, out.Digest = name, img.Manifest.Digest.String()
	return out, nil
}

// attestations is the registry side the packages room's attestation
// source reads through.
func (s *Service) attestations() packages.Attestations {
	return packages.Attestations{
		Statements: s.dist.ImageAttestations,
		Verdict: func(ctx context.Context, name string, opts types.PackagesOptions) (*types.Trust, error) {
			ri, err := s.dist.InspectRemote(ctx, name, types.RemoteInspectOptions{
				InspectOptions: types.InspectOptions{Platform: opts.Platform},
				Auth:           opts.Auth, Registries: opts.Registries, MetaHeaders: opts.MetaHeaders,
			})
			if err != nil {
				return nil, err
			}
			return ri.Trust, nil
		},
		Log: s.log,
	}
}
