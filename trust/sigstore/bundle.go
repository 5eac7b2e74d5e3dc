package sigstore

import (
	"bytes"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// signed is what every format comes down to: bytes, a signature over them,
// the digests they bind to, and the material and tlog entries beside them.
type signed struct {
	version   string // bundle version ("v0.3"); "" for simple signing
	data      []byte // what the signature covers (DSSE PAE, simple-signing payload)
	prehashed []byte // a message signature's SHA-256 digest, when data is nil
	sig       []byte
	subjects  []string // "sha256:<hex>" digests the signed content names
	dockerRef string
	leaf      *x509.Certificate
	chain     []*x509.Certificate // what came with the leaf (intermediates, maybe a root)
	tlog      []tlogEntry
}

type tlogEntry struct {
	body           []byte
	integratedTime int64
	logIndex       int64
	logID          string // hex
	set            []byte
}

// Bundle media types cosign and the spec use; the version comes from them.
var bundleVersions = map[string]string{
	"application/vnd.dev.sigstore.bundle+json;version=0.1": "v0.1",
	"application/vnd.dev.sigstore.bundle+json;version=0.2": "v0.2",
	"application/vnd.dev.sigstore.bundle+json;version=0.3": "v0.3",
	"application/vnd.dev.sigstore.bundle.v0.3+json":        "v0.3",
}

// parseBundle decodes a Sigstore bundle with protobuf-specs' types. It does
// not use sigstore-go's bundle.NewBundle: that rejects a v0.3 bundle with an
// x509CertificateChain, which is exactly what cosign 3 writes when signing
// with --certificate-chain.
func parseBundle(payload []byte) (*signed, error) {
	var b protobundle.Bundle
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(payload, &b); err != nil {
		return nil, fmt.Errorf("bundle is not valid JSON of a Sigstore bundle: %w", err)
	}
	version, ok := bundleVersions[b.GetMediaType()]
	if !ok {
		return nil, fmt.Errorf("bundle media type %q is not a supported Sigstore bundle", b.GetMediaType())
	}
	s := &signed{version: version}
	vm := b.GetVerificationMaterial()
	if vm == nil {
		return nil, errors.New("bundle has no verification material")
	}
	var ders [][]byte
	switch c := vm.GetContent().(type) {
	case *protobundle.VerificationMaterial_PublicKey:
		// A key hint only: the configured keys are tried.
	case *protobundle.VerificationMaterial_Certificate:
		ders = append(ders, c.Certificate.GetRawBytes())
	case *protobundle.VerificationMaterial_X509CertificateChain:
		for _, c := range c.X509CertificateChain.GetCertificates() {
			ders = append(ders, c.GetRawBytes())
		}
	default:
		return nil, errors.New("bundle has no public key hint or certificate")
	}
	if err := s.setCerts(ders); err != nil {
		return nil, err
	}
	for _, e := range vm.GetTlogEntries() {
		s.tlog = append(s.tlog, tlogEntry{
			body:           e.GetCanonicalizedBody(),
			integratedTime: e.GetIntegratedTime(),
			logIndex:       e.GetLogIndex(),
			logID:          hex.EncodeToString(e.GetLogId().GetKeyId()),
			set:            e.GetInclusionPromise().GetSignedEntryTimestamp(),
		})
	}

	switch c := b.GetContent().(type) {
	case *protobundle.Bundle_DsseEnvelope:
		env := c.DsseEnvelope
		if len(env.GetSignatures()) != 1 {
			return nil, fmt.Errorf("DSSE envelope has %d signatures, not 1", len(env.GetSignatures()))
		}
		if env.GetPayloadType() != "application/vnd.in-toto+json" {
			return nil, fmt.Errorf("DSSE payload type %q is not an in-toto statement", env.GetPayloadType())
		}
		s.sig = env.GetSignatures()[0].GetSig()
		s.data = pae(env.GetPayloadType(), env.GetPayload())
		subjects, err := statementSubjects(env.GetPayload())
		if err != nil {
			return nil, err
		}
		s.subjects = subjects
	case *protobundle.Bundle_MessageSignature:
		ms := c.MessageSignature
		md := ms.GetMessageDigest()
		if md.GetAlgorithm() != protocommon.HashAlgorithm_SHA2_256 || len(md.GetDigest()) != 32 {
			return nil, fmt.Errorf("message digest is %s, not a SHA-256 digest", md.GetAlgorithm())
		}
		s.sig = ms.GetSignature()
		s.prehashed = md.GetDigest()
		s.subjects = []string{"sha256:" + hex.EncodeToString(md.GetDigest())}
	default:
		return nil, errors.New("bundle has neither a DSSE envelope nor a message signature")
	}
	if len(s.sig) == 0 {
		return nil, errors.New("bundle has an empty signature")
	}
	return s, nil
}

// setCerts parses the leaf and whatever chain came with it, under the caps.
func (s *signed) setCerts(ders [][]byte) error {
	if len(ders) == 0 {
		return nil
	}
	if len(ders) > maxChainCerts {
		return fmt.Errorf("certificate chain has %d certificates, over the cap of %d", len(ders), maxChainCerts)
	}
	total := 0
	for _, d := range ders {
		total += len(d)
	}
	if total > maxChainBytes {
		return fmt.Errorf("certificate chain is %d bytes, over the %d-byte cap", total, maxChainBytes)
	}
	for i, d := range ders {
		c, err := x509.ParseCertificate(d)
		if err != nil {
			return fmt.Errorf("certificate %d does not parse: %w", i+1, err)
		}
		if i == 0 {
			s.leaf = c
		} else {
			s.chain = append(s.chain, c)
		}
	}
	return nil
}

// pae is DSSE's pre-authentication encoding, what a DSSE signature covers.
func pae(payloadType string, payload []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "DSSEv1 %d %s %d ", len(payloadType), payloadType, len(payload))
	b.Write(payload)
	return b.Bytes()
}

// cosignSignPredicate is the predicate type cosign 3 signs images with.
const cosignSignPredicate = "https://sigstore.dev/cosign/sign/v1"

// statementSubjects returns the sha256 digests an in-toto statement's
// subjects name.
func statementSubjects(payload []byte) ([]string, error) {
	var st struct {
		Type    string `json:"_type"`
		Subject []struct {
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
		PredicateType string `json:"predicateType"`
	}
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, fmt.Errorf("DSSE payload is not an in-toto statement: %w", err)
	}
	if !strings.HasPrefix(st.Type, "https://in-toto.io/Statement/") {
		return nil, fmt.Errorf("DSSE payload type %q is not an in-toto statement", st.Type)
	}
	// An attestation (SLSA provenance, a scan result) signed by the same key
	// is a statement about the image, not an approval of it: only cosign
	// sign's predicate counts as a signature.
	if st.PredicateType != cosignSignPredicate {
		return nil, fmt.Errorf("in-toto predicate %q is an attestation, not a cosign signature (%s)", st.PredicateType, cosignSignPredicate)
	}
	var out []string
	for _, sub := range st.Subject {
		if h, ok := sub.Digest["sha256"]; ok {
			out = append(out, "sha256:"+strings.ToLower(h))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("in-toto statement names no sha256 subject")
	}
	return out, nil
}
