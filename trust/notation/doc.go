// Package notation verifies Notation (notaryproject) signatures, JWS
// (application/jose+json) and COSE (application/cose) envelopes, fully
// offline, against one trust policy statement held in a [Config].
//
// # Configuration, mapped from notation's trust policy
//
// A statement of notation's trustpolicy.json (version 1.0) and the Config
// fields that stand for it:
//
//	statement field                          Config field
//	signatureVerification.level              Level: "strict", "permissive", "audit", "skip"
//	trustStores: "ca:<store>"                TrustStore: the PEM certificates of every such store
//	trustStores: "signingAuthority:<store>"  SigningAuthority: likewise
//	trustedIdentities                        TrustedIdentities, verbatim: "*" or "x509.subject: <DN>"
//	name, registryScopes                     none: trust/policy picks the statement
//	(the time of verification)               Now (time.Now when nil)
//
// New validates the statement as notation does: the level must be one of the
// four; at skip there must be no trust store and no identity; otherwise there
// must be at least one certificate and at least one identity. A "*" must be
// the only identity; any other must be "x509.subject: <DN>", an RFC 4514 DN
// (parsed with the LDAP DN parser notation uses) with single-valued, unique
// RDNs that include C, ST (or S) and O and no "=#" hex values. Plugin
// identities, the "tsa" trust store type, signatureVerification.override and
// verifyTimestamp have no Config field (see What is not verified).
//
// # What is verified, in notation's order
//
// Verify runs notation's checks (trust store and trust policy spec,
// "Signature Verification details") and lets the level decide, per check,
// whether a failure is enforced (Error, not Verified) or logged (a Warning,
// and verification goes on):
//
//	check               strict   permissive  audit   skip
//	integrity           enforce  enforce     enforce skip
//	authenticity        enforce  enforce     log     skip
//	authenticTimestamp  enforce  log         log     skip
//	expiry              enforce  log         log     skip
//	revocation          (never checked: a Warning at every level but skip)
//
// The checks:
//
//   - integrity: the envelope is at most [MaxEnvelopeSize] bytes, of a known
//     media type, with at most [MaxChainLength] certificates (counted before
//     any is parsed); notation-core-go parses it and verifies the signature
//     with the leaf's key (signature.ParseEnvelope, Envelope.Verify), which
//     also checks that the chain is a code-signing chain issued leaf to a
//     self-signed root (key usage digitalSignature, EKU codeSigning) and that
//     the algorithm matches the leaf's key. The payload must be
//     application/vnd.cncf.notary.payload.v1+json. A signature that names a
//     verification plugin (io.cncf.notary.verificationPlugin) fails: wharf
//     runs no plugin, and notation fails it too when the plugin is missing.
//     When the signature manifest carries
//     io.cncf.notary.x509chain.thumbprint#S256 it must list the envelope's
//     chain.
//   - the target: the signed descriptor's digest must be the image's
//     (Image.Digest). Like notation's descriptor comparison, this holds at
//     every level that verifies, audit included.
//   - authenticity: the chain holds a certificate of the trust store of the
//     signing scheme's type ("ca" for notary.x509, "signingAuthority" for
//     notary.x509.signingAuthority), and the leaf's subject contains every
//     RDN of one trusted identity (or the identity is "*").
//   - expiry: the signature's own io.cncf.notary.expiry, against Now.
//   - authenticTimestamp: under notary.x509 notation verifies an RFC 3161
//     countersignature only against a "tsa" trust store; with none (wharf
//     has none) it requires every certificate of the chain to be valid at
//     the time of verification, Config.Now. Under
//     notary.x509.signingAuthority the signing time is authentic and every
//     certificate must have been valid at the signing time.
//
// Time: expiry and (under notary.x509) certificate validity are judged at
// Config.Now, never at the signing time the signer claims; the chain's
// issuance is checked without a time. A leaf that expired after signing is
// therefore rejected at strict and only logged at permissive and audit, as
// notation does without a TSA.
//
// # The Finding
//
// SignatureType "notation", Format trust.FormatNotation, Artifact the
// signature manifest's digest. When verified: Name "notation signature by
// <leaf subject DN>"; Signer.CertificateIssuer the leaf's issuer DN and
// Signer.SubjectAlternativeName the leaf's subject DN (its first e-mail, URI
// or DNS SAN when the subject is empty); KeyFingerprint "SHA256:" and the
// unpadded standard base64 of the SHA-256 of the leaf's DER
// SubjectPublicKeyInfo; Timestamps one "SigningTime", the signed attribute
// (signed by the leaf's key; authentic only under signingAuthority).
// Verified means no enforced check failed: at audit a signature whose chain
// leads to no trusted root still verifies, with the authenticity failure as
// a Warning, because that is what audit means in notation. On failure,
// Error is one sentence and Name, Signer and Timestamps are empty.
//
// At level skip notation does not verify at all; Verify then returns
// Verified false, no Error, and the one Warning [SkippedWarning]: the
// signature was neither accepted nor rejected, and the policy decides what
// a skip statement means.
//
// # What is not verified
//
//   - revocation (OCSP, CRL): it needs the network, and wharf verifies
//     offline. It is as if every statement carried notation's
//     "override": {"revocation": "skip"}; a verified Finding says so in a
//     Warning ([RevocationWarning]), at strict too.
//   - RFC 3161 timestamp countersignatures: there is no "tsa" store, so none
//     is verified and none is reported in Timestamps.
//   - plugins, plugin identities and user metadata.
//
// Verify sends no request and never panics on its input (a recover turns a
// panic in a parser into an Error); FuzzVerify holds it to that.
package notation
