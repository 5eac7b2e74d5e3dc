package notation

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/notaryproject/notation-core-go/signature"
	"github.com/notaryproject/notation-core-go/signature/cose"
	"github.com/notaryproject/notation-core-go/signature/jws"
	"github.com/opencontainers/go-digest"
	gocose "github.com/veraison/go-cose"

	"github.com/wharfproject/wharf/trust"
)

const (
	// MaxEnvelopeSize caps the envelope: a Notation envelope is a payload
	// descriptor of a few hundred bytes, a signature and a short
	// certificate chain (plus an optional timestamp token), a few KiB in
	// practice; 4 MiB leaves room for odd chains while bounding the JSON or
	// CBOR decoding a hostile registry can make us do.
	MaxEnvelopeSize = 4 << 20
	// MaxChainLength caps the certificate chain: leaf, a few
	// intermediates and the root; each extra certificate costs a signature
	// check, so a longer chain is refused before any is verified.
	MaxChainLength = 10

	// MediaTypePayload is the only payload notation signs.
	MediaTypePayload = "application/vnd.cncf.notary.payload.v1+json"
	// AnnotationThumbprints is the signature manifest's annotation listing
	// the hex SHA-256 of each certificate of the chain.
	AnnotationThumbprints = "io.cncf.notary.x509chain.thumbprint#S256"
	// headerVerificationPlugin names a plugin that must verify the
	// signature (notation's critical extended attribute).
	headerVerificationPlugin = "io.cncf.notary.verificationPlugin"

	// SkippedWarning is the one warning a Finding carries at level skip.
	SkippedWarning = "verification skipped by level skip"
	// RevocationWarning says what no offline verifier can check.
	RevocationWarning = "revocation not checked: wharf verifies notation signatures offline (no OCSP or CRL)"
)

// Verifier verifies Notation signatures against one trust policy statement.
type Verifier struct {
	level    string
	actions  map[string]action
	ca       []*x509.Certificate
	sa       []*x509.Certificate
	ids      []identity
	wildcard bool
	now      func() time.Time
}

// New validates cfg as notation validates a trust policy statement: a known
// level; for skip, no trust store and no identity; otherwise at least one
// trust store certificate and valid trusted identities.
func New(cfg Config) (*Verifier, error) {
	actions, ok := levels[cfg.Level]
	if !ok {
		return nil, fmt.Errorf("notation: unknown verification level %q (strict, permissive, audit or skip)", cfg.Level)
	}
	v := &Verifier{level: cfg.Level, actions: actions, now: cfg.Now}
	if v.now == nil {
		v.now = time.Now
	}
	if cfg.Level == "skip" {
		if len(cfg.TrustStore) > 0 || len(cfg.SigningAuthority) > 0 || len(cfg.TrustedIdentities) > 0 {
			return nil, errors.New("notation: level skip takes no trust store and no trusted identity (notation refuses them too)")
		}
		return v, nil
	}
	var err error
	if v.ca, err = parseCertificates("trust store", cfg.TrustStore); err != nil {
		return nil, err
	}
	if v.sa, err = parseCertificates("signing authority store", cfg.SigningAuthority); err != nil {
		return nil, err
	}
	if len(v.ca) == 0 && len(v.sa) == 0 {
		return nil, errors.New("notation: the trust store is empty")
	}
	if v.ids, v.wildcard, err = parseIdentities(cfg.TrustedIdentities); err != nil {
		return nil, err
	}
	return v, nil
}

// check is one run of a level: enforced failures end it, logged ones
// become warnings.
type check struct {
	v *Verifier
	f *trust.Finding
}

// fail records a failed check and reports whether verification must stop.
func (c check) fail(name string, msg string) bool {
	switch c.v.actions[name] {
	case enforce:
		c.f.Error = msg
		return true
	case logged:
		c.f.Warnings = append(c.f.Warnings, fmt.Sprintf("%s check failed (logged at level %s): %s", name, c.v.level, msg))
	}
	return false
}

// Verify verifies one Notation signature artifact for img. It never
// panics and never sends a request.
func (v *Verifier) Verify(ctx context.Context, img trust.Image, a trust.Artifact) (f trust.Finding) {
	f = trust.Finding{SignatureType: "notation", Format: trust.FormatNotation, Artifact: a.Digest}
	defer func() {
		// The parsers below are third-party code fed registry bytes; a
		// panic there must be a failed signature, not a dead daemon.
		if r := recover(); r != nil {
			f = trust.Finding{SignatureType: "notation", Format: trust.FormatNotation, Artifact: a.Digest,
				Error: fmt.Sprintf("envelope could not be verified: %v", r)}
		}
		if f.Error != "" {
			// moby's shape: the identity fields are empty on failure.
			f.Name, f.Signer, f.Timestamps, f.Verified = "", nil, nil, false
		}
	}()
	if v.level == "skip" {
		f.Name = "notation signature (not verified: level skip)"
		f.Warnings = []string{SkippedWarning}
		return f
	}
	if err := ctx.Err(); err != nil {
		f.Error = fmt.Sprintf("verification cancelled: %v", err)
		return f
	}
	content, msg := v.integrity(a)
	if msg != "" {
		f.Error = msg
		return f
	}
	info := &content.SignerInfo
	leaf := info.CertificateChain[0]
	spki := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	f.KeyFingerprint = "SHA256:" + base64.RawStdEncoding.EncodeToString(spki[:])
	f.Name = "notation signature by " + leaf.Subject.String()
	f.Signer = &trust.Signer{CertificateIssuer: leaf.Issuer.String(), SubjectAlternativeName: subjectName(leaf)}
	f.Timestamps = []trust.Timestamp{{Type: "SigningTime", Timestamp: info.SignedAttributes.SigningTime.UTC()}}

	// The signed descriptor must be the image's: enforced at every level
	// that verifies (notation compares it after the level's checks).
	if msg := targetMismatch(content.Payload.Content, img.Digest); msg != "" {
		f.Error = msg
		return f
	}
	c := check{v: v, f: &f}
	if v.authenticity(c, info) || v.expiry(c, info) || v.authenticTimestamp(c, info) {
		return f
	}
	if v.actions[checkRevocation] != skip {
		f.Warnings = append(f.Warnings, RevocationWarning)
	}
	f.Verified = true
	return f
}

// integrity is notation's integrity check: the envelope parses, its
// signature verifies with the leaf's key, the chain is a valid code-signing
// chain (notation-core-go checks issuance, key usage and EKU), and the
// payload is notation's. It also applies wharf's caps and refuses what it
// cannot verify (a plugin). It returns a sentence on failure.
func (v *Verifier) integrity(a trust.Artifact) (*signature.EnvelopeContent, string) {
	if len(a.Payload) > MaxEnvelopeSize {
		return nil, fmt.Sprintf("envelope is %d bytes, over the %d-byte cap", len(a.Payload), MaxEnvelopeSize)
	}
	if a.MediaType != jws.MediaTypeEnvelope && a.MediaType != cose.MediaTypeEnvelope {
		return nil, fmt.Sprintf("envelope media type %q is neither %s nor %s", a.MediaType, jws.MediaTypeEnvelope, cose.MediaTypeEnvelope)
	}
	if n, err := chainLength(a.MediaType, a.Payload); err != nil {
		return nil, fmt.Sprintf("envelope does not parse: %v", err)
	} else if n > MaxChainLength {
		return nil, fmt.Sprintf("certificate chain has %d certificates, over the cap of %d", n, MaxChainLength)
	}
	env, err := signature.ParseEnvelope(a.MediaType, a.Payload)
	if err != nil {
		return nil, fmt.Sprintf("envelope does not parse: %v", err)
	}
	content, err := env.Verify()
	if err != nil {
		return nil, fmt.Sprintf("signature integrity check failed: %v", err)
	}
	if content == nil || len(content.SignerInfo.CertificateChain) == 0 {
		return nil, "envelope carries no certificate chain"
	}
	if content.Payload.ContentType != MediaTypePayload {
		return nil, fmt.Sprintf("payload content type %q is not %s", content.Payload.ContentType, MediaTypePayload)
	}
	if attr, err := content.SignerInfo.ExtendedAttribute(headerVerificationPlugin); err == nil {
		return nil, fmt.Sprintf("signature requires verification plugin %v, which wharf does not run", attr.Value)
	}
	if msg := thumbprintMismatch(a.Annotations, content.SignerInfo.CertificateChain); msg != "" {
		return nil, msg
	}
	return content, ""
}

// chainLength counts the envelope's certificates without parsing them.
func chainLength(mediaType string, b []byte) (int, error) {
	if mediaType == jws.MediaTypeEnvelope {
		var env struct {
			Header struct {
				X5c []json.RawMessage `json:"x5c"`
			} `json:"header"`
		}
		if err := json.Unmarshal(b, &env); err != nil {
			return 0, err
		}
		return len(env.Header.X5c), nil
	}
	var msg gocose.Sign1Message
	if err := msg.UnmarshalCBOR(b); err != nil {
		return 0, err
	}
	chain, _ := msg.Headers.Unprotected[gocose.HeaderLabelX5Chain].([]any)
	return len(chain), nil
}

// thumbprintMismatch checks the manifest's thumbprint annotation, when
// there is one, against the envelope's chain: the annotation is what
// notation shows before fetching the envelope, so it must not lie.
func thumbprintMismatch(annotations map[string]string, chain []*x509.Certificate) string {
	raw, ok := annotations[AnnotationThumbprints]
	if !ok {
		return ""
	}
	var prints []string
	if err := json.Unmarshal([]byte(raw), &prints); err != nil {
		return fmt.Sprintf("annotation %s is not a JSON list of thumbprints", AnnotationThumbprints)
	}
	if len(prints) != len(chain) {
		return fmt.Sprintf("annotation %s lists %d certificates, the envelope carries %d", AnnotationThumbprints, len(prints), len(chain))
	}
	for i, cert := range chain {
		sum := sha256.Sum256(cert.Raw)
		if !strings.EqualFold(prints[i], hex.EncodeToString(sum[:])) {
			return fmt.Sprintf("annotation %s does not match certificate %d of the envelope", AnnotationThumbprints, i)
		}
	}
	return ""
}

// targetMismatch checks that the signed descriptor names want.
func targetMismatch(payload []byte, want digest.Digest) string {
	var p struct {
		TargetArtifact struct {
			Digest digest.Digest `json:"digest"`
		} `json:"targetArtifact"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return "signed payload is not a notation target descriptor"
	}
	if p.TargetArtifact.Digest != want {
		return fmt.Sprintf("signature is over %s, not the image's %s", p.TargetArtifact.Digest, want)
	}
	return ""
}

// authenticity is notation's authenticity check: the chain (already
// verified leaf to root) holds a certificate of the trust store of the
// signing scheme's type, and the leaf's subject is a trusted identity.
// It reports whether verification must stop.
func (v *Verifier) authenticity(c check, info *signature.SignerInfo) bool {
	roots, store := v.ca, "ca"
	if info.SignedAttributes.SigningScheme == signature.SigningSchemeX509SigningAuthority {
		roots, store = v.sa, "signingAuthority"
	} else if info.SignedAttributes.SigningScheme != signature.SigningSchemeX509 {
		return c.fail(checkAuthenticity, fmt.Sprintf("signing scheme %q is unknown", info.SignedAttributes.SigningScheme))
	}
	if len(roots) == 0 {
		return c.fail(checkAuthenticity, fmt.Sprintf("no %s trust store is configured for signing scheme %s", store, info.SignedAttributes.SigningScheme))
	}
	if _, err := signature.VerifyAuthenticity(info, roots); err != nil {
		return c.fail(checkAuthenticity, "certificate chain does not lead to a trust store certificate")
	}
	if v.wildcard {
		return false
	}
	leaf := info.CertificateChain[0]
	have, err := parseDN(leaf.Subject.String(), false)
	if err == nil {
		for _, want := range v.ids {
			if want.within(have) {
				return false
			}
		}
	}
	return c.fail(checkAuthenticity, fmt.Sprintf("signing identity %s is not trusted", leaf.Subject))
}

// expiry is notation's expiry check: the signature's own expiry attribute.
func (v *Verifier) expiry(c check, info *signature.SignerInfo) bool {
	exp := info.SignedAttributes.Expiry
	if !exp.IsZero() && !v.now().Before(exp) {
		return c.fail(checkExpiry, fmt.Sprintf("signature expired at %s", exp.UTC().Format(time.RFC3339)))
	}
	return false
}

// authenticTimestamp is notation's authentic timestamp check. Under
// notary.x509 with no "tsa" trust store (wharf configures none), notation
// verifies no timestamp and requires every certificate of the chain to be
// valid now; under notary.x509.signingAuthority the signing time is
// authentic and every certificate must have been valid then.
func (v *Verifier) authenticTimestamp(c check, info *signature.SignerInfo) bool {
	at, when := v.now(), "now"
	if info.SignedAttributes.SigningScheme == signature.SigningSchemeX509SigningAuthority {
		at, when = info.SignedAttributes.SigningTime, "at signing time"
	}
	for _, cert := range info.CertificateChain {
		if at.Before(cert.NotBefore) {
			return c.fail(checkAuthenticTimestamp, fmt.Sprintf("certificate %s is not valid %s: valid from %s", cert.Subject, when, cert.NotBefore.UTC().Format(time.RFC3339)))
		}
		if at.After(cert.NotAfter) {
			return c.fail(checkAuthenticTimestamp, fmt.Sprintf("certificate %s is not valid %s: expired at %s", cert.Subject, when, cert.NotAfter.UTC().Format(time.RFC3339)))
		}
	}
	return false
}

// subjectName is the leaf's subject DN, or its first SAN when the subject
// is empty.
func subjectName(cert *x509.Certificate) string {
	if s := cert.Subject.String(); s != "" {
		return s
	}
	switch {
	case len(cert.EmailAddresses) > 0:
		return cert.EmailAddresses[0]
	case len(cert.URIs) > 0:
		return cert.URIs[0].String()
	case len(cert.DNSNames) > 0:
		return cert.DNSNames[0]
	}
	return ""
}
