package sigstore

import (
	"bytes"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sigstore/sigstore/pkg/signature/options"

	"github.com/wharfproject/wharf/trust"
)

// verifySigned checks the signature with a configured key or the signing
// certificate, the digest it binds to, the tlog entry (with Rekor keys) and
// the certificate's chain and identity.
func (v *Verifier) verifySigned(f trust.Finding, img trust.Image, s *signed) trust.Finding {
	var by *pubKey
	var keyErr error
	if len(v.keys) > 0 {
		for i := range v.keys {
			if s.verifyWith(v.keys[i]) == nil {
				by = &v.keys[i]
				break
			}
		}
		if by == nil {
			keyErr = errors.New("signature does not verify with any configured key")
		}
	}
	useCert := by == nil && s.leaf != nil && (v.fulcio != nil || v.pki != nil)
	if useCert {
		pk, err := newPubKey(s.leaf.PublicKey)
		if err != nil {
			return fail(f, fmt.Errorf("certificate's public key is unusable: %w", err))
		}
		if err := s.verifyWith(pk); err != nil {
			return fail(f, errors.New("signature does not verify with the certificate's key"))
		}
		by = &pk
	}
	if by == nil {
		if keyErr == nil {
			keyErr = errors.New("signature has no certificate and no key is configured")
		}
		return fail(f, keyErr)
	}

	// The signature is genuine; is it over this image?
	if !slices.Contains(s.subjects, img.Digest.String()) {
		return fail(f, fmt.Errorf("signature is over %s, not the image's %s", strings.Join(s.subjects, ", "), img.Digest))
	}

	// Without a verified timestamp a certificate is checked at "now": a
	// signature made while the certificate was valid is rejected once it has
	// expired, which is the safe side for --tlog-upload=false signatures.
	at := v.now()
	if len(v.rekor) == 0 {
		f.Warnings = append(f.Warnings, "no Rekor key is configured: the transparency-log entry was not checked")
	} else {
		t, err := v.verifyTlog(s)
		if err != nil {
			return fail(f, err)
		}
		at = t
		f.Timestamps = append(f.Timestamps, trust.Timestamp{Type: "Tlog", Timestamp: t})
	}

	kind := "key " + by.fingerprint
	if useCert {
		signer, err := v.checkCert(s, at)
		if err != nil {
			return fail(f, err)
		}
		f.Signer = signer
		kind = signer.SubjectAlternativeName
	}
	f.KeyFingerprint = by.fingerprint
	f.DockerReference = s.dockerRef
	f.Verified = true
	if s.version != "" {
		f.Name = "cosign bundle signed by " + kind
	} else {
		f.Name = "cosign signature signed by " + kind
	}
	return f
}

func (s *signed) verifyWith(k pubKey) error {
	if s.data != nil {
		return k.verifier.VerifySignature(bytes.NewReader(s.sig), bytes.NewReader(s.data))
	}
	return k.verifier.VerifySignature(bytes.NewReader(s.sig), nil, options.WithDigest(s.prehashed))
}

// Fulcio's OIDC-issuer extensions: .1.1 is the legacy raw string, .1.8 the
// DER UTF8String that replaced it.
var (
	oidIssuerV1 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
	oidIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
)

type certRoot struct {
	kind           string // "Fulcio", "PKI"
	roots, inters  *x509.CertPool
	usage          x509.ExtKeyUsage
	email, issuer  string
	hostname       string
	checkOIDCIssue bool
}

func newFulcioRoot(f *Fulcio) (*certRoot, error) {
	certs, err := parseCerts(f.CAPEM)
	if err != nil {
		return nil, err
	}
	r := &certRoot{kind: "Fulcio", roots: x509.NewCertPool(), inters: x509.NewCertPool(),
		usage: x509.ExtKeyUsageCodeSigning, email: f.SubjectEmail, issuer: f.OIDCIssuer, checkOIDCIssue: true}
	// Every certificate of the CA bundle is a trust anchor, as in
	// containers/image's fulcio requirement: an admin may pin Fulcio's
	// intermediate. The chain the signature carries fills the gap.
	for _, c := range certs {
		r.roots.AddCert(c)
	}
	return r, nil
}

func newPKIRoot(p *PKI) (*certRoot, error) {
	roots, err := parseCerts(p.CARootsPEM)
	if err != nil {
		return nil, fmt.Errorf("roots: %w", err)
	}
	// Code signing, as containers/image's pki requirement asks: the CA
	// that signs images often issues TLS server certificates too, and one
	// issued for the required host name must not sign images. A leaf
	// without the extension is valid for any use (RFC 5280 §4.2.1.12, and
	// so in crypto/x509 and containers/image alike).
	r := &certRoot{kind: "PKI", roots: x509.NewCertPool(), inters: x509.NewCertPool(),
		usage: x509.ExtKeyUsageCodeSigning, email: p.SubjectEmail, hostname: p.SubjectHostname}
	for _, c := range roots {
		r.roots.AddCert(c)
	}
	if len(p.CAIntermediatesPEM) > 0 {
		inters, err := parseCerts(p.CAIntermediatesPEM)
		if err != nil {
			return nil, fmt.Errorf("intermediates: %w", err)
		}
		for _, c := range inters {
			r.inters.AddCert(c)
		}
	}
	return r, nil
}

func parseCerts(pemBytes []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := pemBytes
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	return out, nil
}

// checkCert finds a configured CA the leaf chains to at time at and whose
// identity requirements it meets. With both Fulcio and PKI configured, the
// first one's error is reported when neither accepts.
func (v *Verifier) checkCert(s *signed, at time.Time) (*trust.Signer, error) {
	var firstErr error
	for _, r := range []*certRoot{v.fulcio, v.pki} {
		if r == nil {
			continue
		}
		signer, err := r.check(s.leaf, s.chain, at)
		if err == nil {
			return signer, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

func (r *certRoot) check(leaf *x509.Certificate, chain []*x509.Certificate, at time.Time) (*trust.Signer, error) {
	inters := r.inters.Clone()
	for _, c := range chain {
		inters.AddCert(c) // a root in here cannot end a chain: only r.roots do
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots: r.roots, Intermediates: inters, CurrentTime: at,
		KeyUsages: []x509.ExtKeyUsage{r.usage},
	})
	var inv x509.CertificateInvalidError
	switch {
	case err == nil:
	case errors.As(err, &inv) && inv.Reason == x509.Expired:
		return nil, fmt.Errorf("certificate is not valid at %s (valid %s to %s)",
			at.UTC().Format(time.RFC3339), leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
	case errors.As(err, new(x509.UnknownAuthorityError)):
		return nil, fmt.Errorf("certificate chains to no configured %s root", r.kind)
	case errors.As(err, &inv) && inv.Reason == x509.IncompatibleUsage:
		return nil, fmt.Errorf("certificate is not for code signing (extended key usage %s)", ekuNames(leaf))
	default:
		return nil, fmt.Errorf("certificate does not verify against the %s roots: %v", r.kind, err)
	}

	signer := &trust.Signer{CertificateIssuer: leaf.Issuer.String(), Issuer: oidcIssuer(leaf)}
	switch {
	case len(leaf.EmailAddresses) > 0:
		signer.SubjectAlternativeName = leaf.EmailAddresses[0]
	case len(leaf.URIs) > 0:
		signer.SubjectAlternativeName = leaf.URIs[0].String()
	case len(leaf.DNSNames) > 0:
		signer.SubjectAlternativeName = leaf.DNSNames[0]
	}
	if r.email != "" && !slices.Contains(leaf.EmailAddresses, r.email) {
		return nil, fmt.Errorf("subject email %s is not the required %s", orNone(strings.Join(leaf.EmailAddresses, ", ")), r.email)
	}
	if r.hostname != "" && !slices.Contains(leaf.DNSNames, r.hostname) {
		return nil, fmt.Errorf("subject hostname %s is not the required %s", orNone(strings.Join(leaf.DNSNames, ", ")), r.hostname)
	}
	if r.checkOIDCIssue && r.issuer != "" && signer.Issuer != r.issuer {
		return nil, fmt.Errorf("OIDC issuer %s is not the required %s", orNone(signer.Issuer), r.issuer)
	}
	return signer, nil
}

// ekuNames lists a certificate's extended key usages for an error.
func ekuNames(c *x509.Certificate) string {
	var names []string
	for _, u := range c.ExtKeyUsage {
		switch u {
		case x509.ExtKeyUsageServerAuth:
			names = append(names, "serverAuth")
		case x509.ExtKeyUsageClientAuth:
			names = append(names, "clientAuth")
		case x509.ExtKeyUsageCodeSigning:
			names = append(names, "codeSigning")
		case x509.ExtKeyUsageEmailProtection:
			names = append(names, "emailProtection")
		case x509.ExtKeyUsageTimeStamping:
			names = append(names, "timeStamping")
		default:
			names = append(names, fmt.Sprintf("#%d", u))
		}
	}
	for _, o := range c.UnknownExtKeyUsage {
		names = append(names, o.String())
	}
	return orNone(strings.Join(names, ", "))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// oidcIssuer reads the OIDC issuer from the v2 extension, else the legacy one.
func oidcIssuer(c *x509.Certificate) string {
	var v1 string
	for _, e := range c.Extensions {
		switch {
		case e.Id.Equal(oidIssuerV2):
			var s string
			if rest, err := asn1.Unmarshal(e.Value, &s); err == nil && len(rest) == 0 {
				return s
			}
		case e.Id.Equal(oidIssuerV1):
			v1 = string(e.Value)
		}
	}
	return v1
}

// verifyTlog finds a tlog entry whose signed entry timestamp verifies with
// a configured Rekor key and whose body carries this signature, and returns
// its integrated time. Inclusion proofs and checkpoints are not checked.
func (v *Verifier) verifyTlog(s *signed) (time.Time, error) {
	if len(s.tlog) == 0 {
		return time.Time{}, errors.New("signature has no transparency-log entry, and Rekor keys are configured")
	}
	sigB64 := base64.StdEncoding.EncodeToString(s.sig)
	for _, e := range s.tlog {
		k, ok := v.rekor[e.logID]
		if !ok || len(e.set) == 0 {
			continue
		}
		// Rekor signs the canonical JSON of these four fields (keys sorted;
		// base64 and hex need no escaping).
		canon := fmt.Sprintf(`{"body":%q,"integratedTime":%d,"logID":%q,"logIndex":%d}`,
			base64.StdEncoding.EncodeToString(e.body), e.integratedTime, e.logID, e.logIndex)
		if k.verifier.VerifySignature(bytes.NewReader(e.set), strings.NewReader(canon)) != nil {
			continue
		}
		// The entry must be this signature's: its body (hashedrekord,
		// dsse, intoto) carries the signature in base64.
		if !bytes.Contains(e.body, []byte(sigB64)) {
			continue
		}
		return time.Unix(e.integratedTime, 0).UTC(), nil
	}
	return time.Time{}, errors.New("no transparency-log entry verifies with the configured Rekor keys")
}
