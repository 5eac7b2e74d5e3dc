package sigstore

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// The legacy .sig layer's annotations.
const (
	annSignature   = "dev.cosignproject.cosign/signature"
	annCertificate = "dev.sigstore.cosign/certificate"
	annChain       = "dev.sigstore.cosign/chain"
	annBundle      = "dev.sigstore.cosign/bundle"

	simpleSigningType = "cosign container image signature"
)

// parseSimpleSigning decodes a legacy cosign signature: the simple-signing
// payload and its layer's annotations.
func parseSimpleSigning(payload []byte, ann map[string]string) (*signed, error) {
	b64 := ann[annSignature]
	if b64 == "" {
		return nil, fmt.Errorf("no %s annotation", annSignature)
	}
	if len(b64) > maxBase64 {
		return nil, fmt.Errorf("signature annotation is %d bytes, over the %d-byte cap", len(b64), maxBase64)
	}
	sig, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(sig) == 0 {
		return nil, errors.New("signature annotation is not base64")
	}
	var p struct {
		Critical struct {
			Identity struct {
				DockerReference string `json:"docker-reference"`
			} `json:"identity"`
			Image struct {
				DockerManifestDigest string `json:"docker-manifest-digest"`
			} `json:"image"`
			Type string `json:"type"`
		} `json:"critical"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, fmt.Errorf("payload is not simple-signing JSON: %w", err)
	}
	if p.Critical.Type != simpleSigningType {
		return nil, fmt.Errorf("payload type %q is not %q", p.Critical.Type, simpleSigningType)
	}
	s := &signed{
		data:      payload,
		sig:       sig,
		subjects:  []string{p.Critical.Image.DockerManifestDigest},
		dockerRef: p.Critical.Identity.DockerReference,
	}
	if c := ann[annCertificate]; c != "" {
		chain := ann[annChain]
		if len(c)+len(chain) > maxChainBytes {
			return nil, fmt.Errorf("certificate and chain are %d bytes, over the %d-byte cap", len(c)+len(chain), maxChainBytes)
		}
		certs, err := cryptoutils.UnmarshalCertificatesFromPEMLimited([]byte(c+"\n"+chain), maxChainCerts)
		if err != nil {
			return nil, fmt.Errorf("certificate annotations do not parse: %w", err)
		}
		ders := make([][]byte, 0, len(certs))
		for _, crt := range certs {
			ders = append(ders, crt.Raw)
		}
		if err := s.setCerts(ders); err != nil {
			return nil, err
		}
	}
	if rb := ann[annBundle]; rb != "" {
		if len(rb) > maxBase64 {
			return nil, fmt.Errorf("Rekor bundle annotation is %d bytes, over the %d-byte cap", len(rb), maxBase64)
		}
		var r struct {
			SignedEntryTimestamp []byte
			Payload              struct {
				Body           string `json:"body"`
				IntegratedTime int64  `json:"integratedTime"`
				LogIndex       int64  `json:"logIndex"`
				LogID          string `json:"logID"`
			}
		}
		if err := json.Unmarshal([]byte(rb), &r); err != nil {
			return nil, fmt.Errorf("Rekor bundle annotation does not parse: %w", err)
		}
		body, err := base64.StdEncoding.DecodeString(r.Payload.Body)
		if err != nil {
			return nil, errors.New("Rekor bundle body is not base64")
		}
		s.tlog = append(s.tlog, tlogEntry{
			body: body, integratedTime: r.Payload.IntegratedTime, logIndex: r.Payload.LogIndex,
			logID: r.Payload.LogID, set: r.SignedEntryTimestamp,
		})
	}
	return s, nil
}
