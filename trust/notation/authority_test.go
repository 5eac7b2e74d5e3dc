package notation

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/notaryproject/notation-core-go/signature"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/trust"
)

// signAuthority signs d under signing scheme notary.x509.signingAuthority
// with notation-core-go (notation-go's generic signer only signs
// notary.x509).
func signAuthority(t *testing.T, ca *testCA, leafEnd time.Time, d digest.Digest, mediaType string) []byte {
	t.Helper()
	return signCore(t, ca, leafEnd, d, mediaType, signature.SigningSchemeX509SigningAuthority, nil)
}

// signCore signs d with notation-core-go under scheme, with extra signed
// attributes.
func signCore(t *testing.T, ca *testCA, leafEnd time.Time, d digest.Digest, mediaType string, scheme signature.SigningScheme, extra []signature.Attribute) []byte {
	t.Helper()
	leaf, key := ca.leaf(t, signerSubject, leafEnd)
	s, err := signature.NewLocalSigner([]*x509.Certificate{leaf, ca.cert}, key)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]any{"targetArtifact": map[string]any{
		"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": d, "size": 1234}})
	env, err := signature.NewEnvelope(mediaType)
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.Sign(&signature.SignRequest{
		Payload:       signature.Payload{ContentType: MediaTypePayload, Content: payload},
		Signer:        s,
		SigningTime:   time.Now(),
		SigningScheme: scheme,
		SigningAgent:  "wharf-test",

		ExtendedSignedAttributes: extra,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSigningAuthority(t *testing.T) {
	ca := newCA(t, "wharf signing authority")
	soon := time.Now().Add(2 * time.Hour)
	for _, mt := range []string{jwsType, coseType} {
		for _, c := range []struct {
			name    string
			store   string // "ca" or "signingAuthority"
			leafEnd time.Time
			want    string
		}{
			{"accepted by the signingAuthority store", "signingAuthority", time.Now().Add(24 * time.Hour), ""},
			// authenticTimestamp: the signing time is authentic under
			// this scheme, so a leaf that expired since still verifies
			{"leaf expired after signing, valid at signing time", "signingAuthority", time.Now().Add(time.Hour), ""},
			// authenticity: a "ca" store does not verify this scheme
			{"a ca store does not verify it", "ca", time.Now().Add(24 * time.Hour), "no signingAuthority trust store is configured"},
		} {
			t.Run(c.name+"/"+mt, func(t *testing.T) {
				cfg := Config{Level: "strict", TrustedIdentities: []string{trustedID}, Now: func() time.Time { return soon }}
				if c.store == "ca" {
					cfg.TrustStore = [][]byte{ca.pem()}
				} else {
					cfg.SigningAuthority = [][]byte{ca.pem()}
				}
				v, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				env := signAuthority(t, ca, c.leafEnd, imageDigest, mt)
				f := v.Verify(context.Background(), trust.Image{Digest: imageDigest}, trust.Artifact{MediaType: mt, Payload: env})
				if c.want == "" {
					if !f.Verified {
						t.Fatalf("not verified: %q", f.Error)
					}
					return
				}
				if f.Verified || !strings.Contains(f.Error, c.want) {
					t.Fatalf("Verified=%v Error=%q, want %q", f.Verified, f.Error, c.want)
				}
			})
		}
	}
}

// A signature that names a verification plugin fails integrity: wharf runs
// no plugin, and notation fails such a signature when the plugin is absent.
func TestVerificationPluginRefused(t *testing.T) {
	ca := newCA(t, "wharf test root")
	v, err := New(Config{Level: "audit", TrustStore: [][]byte{ca.pem()}, TrustedIdentities: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range []string{jwsType, coseType} {
		env := signCore(t, ca, time.Now().Add(time.Hour), imageDigest, mt, signature.SigningSchemeX509,
			[]signature.Attribute{{Key: headerVerificationPlugin, Critical: true, Value: "acme-verifier"}})
		f := v.Verify(context.Background(), trust.Image{Digest: imageDigest}, trust.Artifact{MediaType: mt, Payload: env})
		if f.Verified || !strings.Contains(f.Error, "requires verification plugin acme-verifier") {
			t.Fatalf("%s: Verified=%v Error=%q", mt, f.Verified, f.Error)
		}
	}
}
