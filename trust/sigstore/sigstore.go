package sigstore

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/wharfproject/wharf/trust"
)

// Caps on outside input. The registry layer caps what it fetches too; these
// keep this package safe on its own (fuzzing, a future caller).
const (
	// maxPayload: a bundle or simple-signing payload is a few KiB; 1 MiB
	// leaves room for a long chain and several tlog entries while keeping
	// JSON decoding of hostile input cheap.
	maxPayload = 1 << 20
	// maxChainCerts: real chains are 2 or 3 certificates; 10 bounds the
	// work x509 path building can be made to do.
	maxChainCerts = 10
	// maxChainBytes: 10 certificates of a few KiB each, with room to spare.
	maxChainBytes = 256 << 10
	// maxBase64: an annotation's base64 signature or SET; an RSA-4096
	// signature is 684 characters, so 64 KiB is generous.
	maxBase64 = 64 << 10
)

// Config is one requirement's trust roots, as bytes (the policy reads the
// files). Keys, Fulcio and PKI may be combined: a signature verifies if any
// of them accepts it.
type Config struct {
	// Keys are PEM public keys (ECDSA, Ed25519, RSA).
	Keys [][]byte
	// Fulcio is a Fulcio CA and the identity it must have certified.
	Fulcio *Fulcio
	// PKI is your own CA and the identity it must have certified.
	PKI *PKI
	// RekorKeys are PEM public keys of Rekor logs. With none, the tlog entry
	// is not checked and every finding carries a Warning saying so.
	RekorKeys [][]byte
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Fulcio is containers-policy.json's "fulcio" block.
type Fulcio struct {
	CAPEM        []byte // roots and intermediates (caPath/caData)
	OIDCIssuer   string // required; "" accepts any
	SubjectEmail string // required; "" accepts any
}

// PKI is containers-policy.json's "pki" block: your own CA.
type PKI struct {
	CARootsPEM         []byte
	CAIntermediatesPEM []byte
	SubjectEmail       string
	SubjectHostname    string
}

// Verifier verifies cosign signatures against one Config. It is safe for
// concurrent use.
type Verifier struct {
	keys   []pubKey
	fulcio *certRoot
	pki    *certRoot
	rekor  map[string]pubKey // by log ID (hex SHA-256 of the DER key)
	now    func() time.Time
}

type pubKey struct {
	pub         crypto.PublicKey
	verifier    signature.Verifier
	fingerprint string
}

// New parses and validates every key and certificate now: a bad one is an
// error at load, not a failed verification later.
func New(cfg Config) (*Verifier, error) {
	v := &Verifier{now: cfg.Now, rekor: map[string]pubKey{}}
	if v.now == nil {
		v.now = time.Now
	}
	for i, k := range cfg.Keys {
		pk, err := loadKey(k)
		if err != nil {
			return nil, fmt.Errorf("sigstore: key %d: %w", i+1, err)
		}
		v.keys = append(v.keys, pk)
	}
	for i, k := range cfg.RekorKeys {
		pk, err := loadKey(k)
		if err != nil {
			return nil, fmt.Errorf("sigstore: Rekor key %d: %w", i+1, err)
		}
		der, _ := x509.MarshalPKIXPublicKey(pk.pub)
		sum := sha256.Sum256(der)
		v.rekor[fmt.Sprintf("%x", sum)] = pk
	}
	if f := cfg.Fulcio; f != nil {
		r, err := newFulcioRoot(f)
		if err != nil {
			return nil, fmt.Errorf("sigstore: fulcio: %w", err)
		}
		v.fulcio = r
	}
	if p := cfg.PKI; p != nil {
		r, err := newPKIRoot(p)
		if err != nil {
			return nil, fmt.Errorf("sigstore: pki: %w", err)
		}
		v.pki = r
	}
	if len(v.keys) == 0 && v.fulcio == nil && v.pki == nil {
		return nil, errors.New("sigstore: no trust root: give keys, a Fulcio CA or a PKI")
	}
	return v, nil
}

func loadKey(pemBytes []byte) (pubKey, error) {
	if len(pemBytes) > maxChainBytes {
		return pubKey{}, fmt.Errorf("%d bytes, over the %d-byte cap", len(pemBytes), maxChainBytes)
	}
	blk, _ := pem.Decode(pemBytes)
	if blk == nil {
		return pubKey{}, errors.New("no PEM block")
	}
	pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return pubKey{}, fmt.Errorf("not a PKIX public key: %w", err)
	}
	return newPubKey(pub)
}

func newPubKey(pub crypto.PublicKey) (pubKey, error) {
	if err := cryptoutils.ValidatePubKey(pub); err != nil {
		return pubKey{}, err
	}
	ver, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return pubKey{}, err
	}
	fp, err := fingerprint(pub)
	if err != nil {
		return pubKey{}, err
	}
	return pubKey{pub: pub, verifier: ver, fingerprint: fp}, nil
}

// fingerprint is "SHA256:" and the unpadded base64 of the SHA-256 of the DER
// SubjectPublicKeyInfo (ssh-keygen's style).
func fingerprint(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:]), nil
}

// Verify verifies one artifact for img. It never panics on what the artifact
// holds; any failure is a Finding with Verified false and Error set.
func (v *Verifier) Verify(ctx context.Context, img trust.Image, a trust.Artifact) (f trust.Finding) {
	f = trust.Finding{Format: a.Format, Artifact: a.Digest}
	defer func() {
		if r := recover(); r != nil { // belt and braces: outside input never panics us
			f = fail(f, fmt.Errorf("malformed signature: %v", r))
		}
	}()
	if err := ctx.Err(); err != nil {
		return fail(f, err)
	}
	if len(a.Payload) > maxPayload {
		return fail(f, fmt.Errorf("payload is %d bytes, over the %d-byte cap", len(a.Payload), maxPayload))
	}
	var s *signed
	var err error
	switch a.Format {
	case trust.FormatSigstoreBundle:
		f.SignatureType = "bundle"
		s, err = parseBundle(a.Payload)
	case trust.FormatSimpleSigning:
		f.SignatureType = "hashedrecord"
		s, err = parseSimpleSigning(a.Payload, a.Annotations)
	default:
		err = fmt.Errorf("format %q is not a cosign signature", a.Format)
	}
	if err != nil {
		return fail(f, err)
	}
	if s.version != "" {
		f.SignatureType = "bundle-" + s.version
	}
	return v.verifySigned(f, img, s)
}

// fail is a rejection: moby's fields other than Error stay empty.
func fail(f trust.Finding, err error) trust.Finding {
	return trust.Finding{Format: f.Format, Artifact: f.Artifact, Error: err.Error()}
}
