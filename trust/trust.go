// Package trust holds the types that the signature verifiers and the policy
// share: the image a verdict is about, one signature artifact as fetched from
// a registry, one signature's finding and the policy's verdict.
//
// The packages below it each do one job:
//
//	trust/policy    containers-policy.json(5) (and wharf's notationSigned):
//	                parse, pick the scope for a name, evaluate its requirements
//	trust/sigstore  cosign: Sigstore bundles (v0.1–v0.3) and legacy
//	                simple-signing .sig manifests, against keys, a Fulcio CA,
//	                your own PKI and Rekor keys, all from files, fully offline
//	trust/notation  Notation COSE and JWS envelopes against a trust store,
//	                trusted identities and a verification level
//
// None of them sends a request: finding the artifacts is the registry's job
// (graph/distribution), and they arrive here as bytes, already capped.
package trust

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
)

// Key names one signature: its artifact and its layer (Artifact.Layer).
func (a Artifact) Key() string { return a.Digest.String() + "#" + strconv.Itoa(a.Layer) }

// Source is the signature artifacts of one image, read one at a time as
// a requirement asks for them: a registry may list hundreds of bogus
// signatures, and holding them all, or verifying them after one has
// verified, is work a pusher of referrers chooses. A Source may be walked
// more than once (one walk per requirement).
type Source interface {
	// Each calls fn with each artifact in turn, reading it only when its
	// turn comes, until fn returns false or none is left. An error ends
	// the walk: ErrSignatureLimit when the source's caps were reached, or
	// the registry's.
	Each(ctx context.Context, fn func(Artifact) (more bool)) error
}

// Artifacts is a Source over artifacts already in memory.
type Artifacts []Artifact

// Each implements Source.
func (as Artifacts) Each(ctx context.Context, fn func(Artifact) bool) error {
	for _, a := range as {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !fn(a) {
			return nil
		}
	}
	return nil
}

// ErrSignatureLimit: a walk of a Source stopped at its cap on signatures
// or on their bytes per image. The artifacts are the registry's to choose,
// so this says nothing about the connection: a verdict reached without the
// rest is final (a rejection, when none verified before the cap).
var ErrSignatureLimit = errors.New("signature limit reached")

// Image is what a verdict is about: the name the user asked for (never the
// mirror that served it) and the manifest digest that name resolved to.
type Image struct {
	// Reference is the user's name, normalised (docker.io/library/alpine:3),
	// possibly with a tag, possibly a digested reference.
	Reference reference.Named
	// Digest is the manifest (or index) digest being judged.
	Digest digest.Digest
}

// Format says how one signature artifact is encoded.
type Format string

const (
	// FormatSigstoreBundle is a Sigstore bundle (cosign 3's default), as a
	// referrer (artifactType application/vnd.dev.sigstore.bundle.v0.3+json)
	// or in the tag schema's sha256-<hex> index.
	FormatSigstoreBundle Format = "sigstore-bundle"
	// FormatSimpleSigning is a legacy cosign signature: one layer of a
	// sha256-<hex>.sig manifest whose body is the simple-signing payload and
	// whose annotations carry the signature, certificate, chain and bundle.
	FormatSimpleSigning Format = "cosign-simplesigning"
	// FormatNotation is a Notation envelope (application/jose+json or
	// application/cose), found as a referrer with artifactType
	// application/vnd.cncf.notary.signature.
	FormatNotation Format = "notation"
)

// Artifact is one signature found for an image, as its bytes came from the
// registry. Every field was read under a size cap, and Payload's digest was
// verified against the descriptor it came from.
type Artifact struct {
	Format Format
	// Digest is the signature artifact's own manifest digest: what a user
	// can fetch again, and what inspect reports beside moby's fields.
	Digest digest.Digest
	// Layer is the payload's position among its manifest's layers. A
	// legacy .sig manifest holds one signature per layer, often over the
	// same payload bytes (cosign signs the same simple-signing document
	// with each key), so neither Digest nor the payload's digest names one
	// signature: (Digest, Layer) does.
	Layer int
	// Subject is the digest the artifact says it signs (a referrer's
	// subject, or the digest in a sha256-<hex> tag).
	Subject digest.Digest
	// MediaType is the payload's media type: the bundle's, the simple
	// signing payload's, or the Notation envelope's.
	MediaType string
	// Payload is the bundle JSON, the simple-signing payload, or the
	// Notation envelope.
	Payload []byte
	// Annotations are the layer's (legacy cosign: the base64 signature,
	// the certificate, the chain, the Rekor bundle) or the manifest's.
	Annotations map[string]string
}

// Finding is one signature's verification, in the shape of moby's
// image.SignatureIdentity (API 1.53) plus what wharf knows beyond it.
type Finding struct {
	// Name summarises the signature ("cosign bundle signed by key
	// SHA256:…", "notation signature by CN=…").
	Name string
	// SignatureType is moby's: "bundle-v0.3" for a Sigstore bundle,
	// "hashedrecord" for simple signing; "notation" for Notation.
	SignatureType string
	// Signer is the certificate's identity where there is one.
	Signer *Signer
	// Timestamps are the verified signed times (Rekor integrated time,
	// RFC 3161 timestamps, Notation's signing time where authenticated).
	Timestamps []Timestamp
	// DockerReference is the reference the signature names (legacy simple
	// signing only: a bundle names no reference).
	DockerReference string
	// Error says why this signature failed to verify; the other moby
	// fields are then empty.
	Error string
	// Warnings are what verified but deserves a look (no Rekor key
	// configured, so the transparency-log entry was not checked).
	Warnings []string

	// Beyond moby's shape.
	Format Format
	// Artifact is the signature artifact's digest.
	Artifact digest.Digest
	// KeyFingerprint is "SHA256:<base64>" of the public key that verified
	// (the key's, or the leaf certificate's).
	KeyFingerprint string
	// Verified is true when the signature is cryptographically valid over
	// Image.Digest against a trust root of the requirement that judged it.
	Verified bool
}

// Signer is the identity in a signing certificate (moby's SignerIdentity,
// the fields a Fulcio or PKI certificate carries).
type Signer struct {
	CertificateIssuer      string // the issuing CA's subject
	SubjectAlternativeName string // e-mail, URI or host name
	Issuer                 string // the OIDC issuer (Fulcio extension 1.3.6.1.4.1.57264.1.8)
}

// Timestamp is one verified time a signature is bound to.
type Timestamp struct {
	Type      string // "Tlog" (Rekor), "TimestampAuthority", "SigningTime"
	URI       string
	Timestamp time.Time
}

// Decision is the policy's verdict on an image.
type Decision string

const (
	// NoPolicy: no policy is configured and none was asked for.
	NoPolicy Decision = "no-policy"
	// Accepted: every requirement of the scope is satisfied.
	Accepted Decision = "accepted"
	// Rejected: a requirement is not satisfied (Reason says which and why).
	Rejected Decision = "rejected"
)

// Verdict is what the policy decided for one image, and what it saw.
type Verdict struct {
	Decision Decision
	// Scope is the policy scope that applied ("docker.io/library/alpine",
	// "docker.io", "*.example.com", "" for transports.docker's default,
	// "default" for the top-level default).
	Scope string
	// Requirement names the requirement that decided (its type, and for a
	// rejection the first one not satisfied).
	Requirement string
	// Reason is a sentence a user reads: why it was rejected, or what
	// satisfied it.
	Reason string
	// Findings are every signature looked at, verified or not.
	Findings []Finding
	// Revision identifies the policy the verdict was reached under (a
	// digest of the file), so that a cached verdict dies with a reload.
	Revision string
}
