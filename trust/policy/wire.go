package policy

import (
	"context"
	"time"

	"github.com/wharfproject/wharf/trust"
)

// Verifier is what the policy needs of trust/sigstore's and trust/notation's
// verifiers: one signature artifact judged against the trust roots of one
// requirement. The policy never passes an artifact whose Subject is not
// img.Digest, and it never asks for a format the verifier was not made for.
type Verifier interface {
	Verify(ctx context.Context, img trust.Image, a trust.Artifact) trust.Finding
}

// SigstoreConfig is one sigstoreSigned requirement's trust roots, read from
// the policy (files already read, base64 already decoded). It mirrors
// trust/sigstore.Config field for field.
type SigstoreConfig struct {
	Keys      [][]byte // PEM public keys (keyPath, keyPaths, keyData, keyDatas)
	Fulcio    *FulcioConfig
	PKI       *PKIConfig
	RekorKeys [][]byte // PEM Rekor public keys
	Now       func() time.Time
}

// FulcioConfig mirrors trust/sigstore.Fulcio.
type FulcioConfig struct {
	CAPEM        []byte
	OIDCIssuer   string
	SubjectEmail string
}

// PKIConfig mirrors trust/sigstore.PKI.
type PKIConfig struct {
	CARootsPEM         []byte
	CAIntermediatesPEM []byte
	SubjectEmail       string
	SubjectHostname    string
}

// NotationConfig is one notationSigned requirement, mirroring
// trust/notation.Config.
type NotationConfig struct {
	TrustStore        [][]byte // PEM CA certificates
	TrustedIdentities []string // "x509.subject: …" or "*"
	Level             string   // strict, permissive or audit (skip builds none)
	Now               func() time.Time
}

// Options are how Load builds the verifiers a policy's requirements need.
// The daemon wires the real packages in a few lines:
//
//	policy.Options{
//		NewSigstore: func(c policy.SigstoreConfig) (policy.Verifier, error) {
//			cfg := sigstore.Config{Keys: c.Keys, RekorKeys: c.RekorKeys, Now: c.Now}
//			if c.Fulcio != nil {
//				cfg.Fulcio = &sigstore.Fulcio{CAPEM: c.Fulcio.CAPEM, OIDCIssuer: c.Fulcio.OIDCIssuer, SubjectEmail: c.Fulcio.SubjectEmail}
//			}
//			if c.PKI != nil {
//				cfg.PKI = &sigstore.PKI{CARootsPEM: c.PKI.CARootsPEM, CAIntermediatesPEM: c.PKI.CAIntermediatesPEM,
//					SubjectEmail: c.PKI.SubjectEmail, SubjectHostname: c.PKI.SubjectHostname}
//			}
//			return sigstore.New(cfg)
//		},
//		NewNotation: func(c policy.NotationConfig) (policy.Verifier, error) {
//			return notation.New(notation.Config{TrustStore: c.TrustStore,
//				TrustedIdentities: c.TrustedIdentities, Level: c.Level, Now: c.Now})
//		},
//	}
//
// A policy that needs a verifier whose constructor is nil does not load
// (ErrNoVerifier): a requirement that could never be satisfied is a
// configuration error, not a silent rejection of every image.
type Options struct {
	NewSigstore func(SigstoreConfig) (Verifier, error)
	NewNotation func(NotationConfig) (Verifier, error)
	// Now is passed to the verifiers (nil: time.Now).
	Now func() time.Time
}
