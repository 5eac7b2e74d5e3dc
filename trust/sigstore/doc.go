// Package sigstore verifies cosign signatures fully offline, against trust
// roots handed to it as bytes: PEM public keys, a Fulcio CA bundle with the
// required OIDC issuer and subject e-mail, or your own PKI (roots,
// intermediates, subject e-mail or host name), and optionally Rekor keys.
//
// It verifies Sigstore bundles (v0.1 to v0.3: a DSSE envelope over an in-toto
// statement of cosign sign's predicate whose subject names the image digest,
// or a message signature over the image digest) and legacy simple-signing .sig
// layers (the signature over the payload, whose docker-manifest-digest must be
// the image's). Bundles are decoded with protobuf-specs' types and checked
// with sigstore/sigstore's verifiers, not sigstore-go's: sigstore-go v1.2.1's
// bundle loader rejects the v0.3 bundle with an x509CertificateChain that
// cosign 3.1.3 writes for --certificate-chain, and legacy .sig layers need
// this path anyway, so both formats share one. A signing
// certificate must chain to a configured root, be issued for code signing
// (extended key usage codeSigning, or none), and carry the configured
// identity; it is checked at the Rekor integrated time when a configured
// Rekor key verified the entry's signed entry timestamp, and otherwise at
// "now" (Config.Now, else the wall clock).
//
// Without Rekor keys the transparency-log entry is not checked at all (cosign
// --tlog-upload=false signatures have none): the finding then carries a
// Warning saying so. With Rekor keys, a signature must have an entry whose
// signed entry timestamp verifies with one of them and whose body names this
// signature; inclusion proofs and checkpoints are not checked.
//
// The policy (trust/policy) judges DockerReference and decides; this package
// only says whether a signature is valid and by whom.
package sigstore
