package packages

import (
	"context"
	"errors"

	"github.com/moby/moby/api/types/image"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

// errSBOMFound ends the attestation walk at the first SBOM statement.
var errSBOMFound = errors.New("SBOM found")

// Attestations are what the attestation source asks of the registry side
// (graph/distribution): the statements attached to an image, and the
// signature policy's verdict on it.
type Attestations struct {
	Statements func(ctx context.Context, name string, opts types.AttestationOptions, emit func(image.AttestationStatement) error) error
	Verdict    func(ctx context.Context, name string, opts types.PackagesOptions) (*types.Trust, error)
	Log        *logrus.Entry
}

// FromAttestation is the package list of the first SBOM attestation (SPDX
// or CycloneDX in-toto statement) attached to name, nil when it has none
// or none readable. Under a signature policy the image is judged as a
// remote inspect judges it: the statement is used only when the verdict
// accepts the image, and is said Verified, with the signer, when a
// signature verified.
func FromAttestation(ctx context.Context, a Attestations, name string, opts types.PackagesOptions) (*types.ImagePackages, error) {
	var stmt []byte
	err := a.Statements(ctx, name, types.AttestationOptions{
		Platform: opts.Platform, PredicateTypes: SBOMPredicates, Statement: true,
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
			a.Log.WithError(err).Debugf("packages of %s: no attestation read; the databases answer", name)
		}
		return nil, nil
	}
	pkgs, err := FromStatement(stmt, DefaultLimits().MaxPackages)
	if err != nil {
		a.Log.WithError(err).Warnf("packages of %s: the SBOM attestation is unreadable; the databases answer", name)
		return nil, nil
	}
	out := &types.ImagePackages{Source: types.PackagesFromAttestation, Packages: pkgs}
	if !opts.Remote {
		return out, nil
	}
	t, err := a.Verdict(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	if t != nil {
		if t.Decision != "accepted" {
			a.Log.Infof("packages of %s: the policy does not accept the image (%s); its SBOM attestation is not used", name, t.Reason)
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
