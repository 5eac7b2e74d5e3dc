package graph

import (
	"context"
	"errors"

	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/packages"
)

// errSBOMFound ends the attestation walk at the first SBOM statement.
var errSBOMFound = errors.New("SBOM found")

// packagesFromAttestation is the package list of the first SBOM
// attestation (SPDX or CycloneDX in-toto statement) attached to name, nil
// when it has none or none readable. Under a signature policy the image
// is judged as a remote inspect judges it: the statement is used only
// when the verdict accepts the image, and is said Verified, with the
// signer, when a signature verified.
func (s *Service) packagesFromAttestation(ctx context.Context, name string, opts types.PackagesOptions) (*types.ImagePackages, error) {
	var stmt []byte
	err := s.dist.ImageAttestations(ctx, name, types.AttestationOptions{
		Platform: opts.Platform, PredicateTypes: packages.SBOMPredicates, Statement: true,
		Remote: opts.Remote, Auth: opts.Auth, Registries: opts.Registries, MetaHeaders: opts.MetaHeaders,
	}, func(st image.AttestationStatement) error {
		if st.Statement == nil {
			return nil
		}
		stmt = append([]byte(nil), *st.Statement...)
		return errSBOMFound
	})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if stmt == nil {
		if err != nil {
			s.log.WithError(err).Debugf("packages of %s: no attestation read; the databases answer", name)
		}
		return nil, nil
	}
	pkgs, err := packages.FromStatement(stmt, packages.DefaultLimits().MaxPackages)
	if err != nil {
		s.log.WithError(err).Warnf("packages of %s: the SBOM attestation is unreadable; the databases answer", name)
		return nil, nil
	}
	out := &types.ImagePackages{Source: types.PackagesFromAttestation, Packages: pkgs}
	if !opts.Remote {
		return out, nil
	}
	ri, err := s.dist.InspectRemote(ctx, name, types.RemoteInspectOptions{
		InspectOptions: types.InspectOptions{Platform: opts.Platform},
		Auth:           opts.Auth, Registries: opts.Registries, MetaHeaders: opts.MetaHeaders,
	})
	if err != nil {
		return nil, err
	}
	if t := ri.Trust; t != nil {
		if t.Decision != "accepted" {
			s.log.Infof("packages of %s: the policy does not accept the image (%s); its SBOM attestation is not used", name, t.Reason)
			return nil, nil
		}
		// Accepted by a signature that verified (not by a scope that
		// accepts anything): the attestation manifest is named by digest
		// in the signed index.
		for _, sig := range t.Signatures {
			if !sig.Verified {
				continue
			}
			out.Verified = true
			switch {
			case sig.Signer != nil && sig.Signer.SubjectAlternativeName != "":
				out.SignedBy = sig.Signer.SubjectAlternativeName
			case sig.KeyFingerprint != "":
				out.SignedBy = sig.KeyFingerprint
			}
			break
		}
	}
	return out, nil
}
