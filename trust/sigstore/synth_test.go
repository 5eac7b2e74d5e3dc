package sigstore

// Signatures made here, not by cosign: the shapes cosign does not write
// offline (a message-signature bundle, Ed25519 and RSA keys, a Rekor entry).

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/trust"
)

func pubPEM(t *testing.T, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// signBytes signs data the way sigstore's verifiers expect for each key type.
func signBytes(t *testing.T, k crypto.Signer, data []byte) []byte {
	t.Helper()
	var sig []byte
	var err error
	if _, ok := k.(ed25519.PrivateKey); ok {
		sig, err = k.Sign(rand.Reader, data, crypto.Hash(0))
	} else {
		sum := sha256.Sum256(data)
		sig, err = k.Sign(rand.Reader, sum[:], crypto.SHA256)
	}
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func dsseBundle(t *testing.T, k crypto.Signer, mediaType string, subject digest.Digest) []byte {
	return dsseBundlePredicate(t, k, mediaType, subject, cosignSignPredicate)
}

func dsseBundlePredicate(t *testing.T, k crypto.Signer, mediaType string, subject digest.Digest, predicate string) []byte {
	t.Helper()
	stmt := fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"sha256":%q}}],"predicateType":%q,"predicate":{}}`, subject.Encoded(), predicate)
	sig := signBytes(t, k, pae("application/vnd.in-toto+json", []byte(stmt)))
	b, _ := json.Marshal(map[string]any{
		"mediaType":            mediaType,
		"verificationMaterial": map[string]any{"publicKey": map[string]any{"hint": "x"}},
		"dsseEnvelope": map[string]any{
			"payload": base64.StdEncoding.EncodeToString([]byte(stmt)), "payloadType": "application/vnd.in-toto+json",
			"signatures": []any{map[string]any{"sig": base64.StdEncoding.EncodeToString(sig)}},
		},
	})
	return b
}

func messageBundle(t *testing.T, k crypto.Signer, subject digest.Digest) []byte {
	t.Helper()
	sum, _ := hex.DecodeString(subject.Encoded())
	sig, err := k.Sign(rand.Reader, sum, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{
		"mediaType":            "application/vnd.dev.sigstore.bundle+json;version=0.2",
		"verificationMaterial": map[string]any{"publicKey": map[string]any{"hint": "x"}},
		"messageSignature": map[string]any{
			"messageDigest": map[string]any{"algorithm": "SHA2_256", "digest": base64.StdEncoding.EncodeToString(sum)},
			"signature":     base64.StdEncoding.EncodeToString(sig),
		},
	})
	return b
}

func TestKeyTypesAndBundleVersions(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	img := trust.Image{Digest: digest.FromString("image")}
	for _, k := range []struct {
		name string
		key  crypto.Signer
	}{{"ecdsa", ec}, {"ed25519", ed}, {"rsa", rk}} {
		v, err := New(Config{Keys: [][]byte{pubPEM(t, k.key.Public())}})
		if err != nil {
			t.Fatal(err)
		}
		for mt, ver := range bundleVersions {
			a := trust.Artifact{Format: trust.FormatSigstoreBundle, Payload: dsseBundle(t, k.key, mt, img.Digest)}
			f := v.Verify(context.Background(), img, a)
			if !f.Verified || f.SignatureType != "bundle-"+ver {
				t.Errorf("%s %s: %+v", k.name, mt, f)
			}
		}
	}
	// the predicate check: an attestation by the same key is no signature
	v, _ := New(Config{Keys: [][]byte{pubPEM(t, ec.Public())}})
	att := trust.Artifact{Format: trust.FormatSigstoreBundle,
		Payload: dsseBundlePredicate(t, ec, "application/vnd.dev.sigstore.bundle.v0.3+json", img.Digest, "https://slsa.dev/provenance/v1")}
	if f := v.Verify(context.Background(), img, att); f.Verified || !strings.Contains(f.Error, "is an attestation, not a cosign signature") {
		t.Errorf("attestation: %+v", f)
	}
	// A message signature over the image digest (prehashed: not Ed25519).
	for _, k := range []crypto.Signer{ec, rk} {
		v, _ := New(Config{Keys: [][]byte{pubPEM(t, k.Public())}})
		a := trust.Artifact{Format: trust.FormatSigstoreBundle, Payload: messageBundle(t, k, img.Digest)}
		if f := v.Verify(context.Background(), img, a); !f.Verified || f.SignatureType != "bundle-v0.2" {
			t.Errorf("message signature: %+v", f)
		}
		// the digest binding: messageDigest is another digest's
		other := trust.Image{Digest: digest.FromString("other")}
		if f := v.Verify(context.Background(), other, a); f.Verified || !strings.Contains(f.Error, "signature is over "+img.Digest.String()+", not the image's "+other.Digest.String()) {
			t.Errorf("message signature over another digest: %+v", f)
		}
	}
}

func TestNewRejectsBadRoots(t *testing.T) {
	for name, cfg := range map[string]Config{
		"nothing":       {},
		"garbage key":   {Keys: [][]byte{[]byte("not a key")}},
		"cert not key":  {Keys: [][]byte{pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{0x30, 0}})}},
		"bad rekor key": {Keys: [][]byte{mustPub(t)}, RekorKeys: [][]byte{[]byte("x")}},
		"empty fulcio":  {Fulcio: &Fulcio{}},
		"empty pki":     {PKI: &PKI{}},
		"bad pki inter": {PKI: &PKI{CARootsPEM: mustCA(t), CAIntermediatesPEM: []byte("junk")}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

func mustPub(t *testing.T) []byte {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	return pubPEM(t, k.Public())
}

func mustCA(t *testing.T) []byte {
	fx := loadFixtures(t, "testdata")
	return fx.root
}

func TestCaps(t *testing.T) {
	v, _ := New(Config{Keys: [][]byte{mustPub(t)}})
	img := trust.Image{Digest: digest.FromString("image")}
	big := trust.Artifact{Format: trust.FormatSigstoreBundle, Payload: make([]byte, maxPayload+1)}
	if f := v.Verify(context.Background(), img, big); f.Verified || !strings.Contains(f.Error, "over the") {
		t.Errorf("payload cap: %+v", f)
	}
	sig := trust.Artifact{Format: trust.FormatSimpleSigning, Payload: []byte("{}"),
		Annotations: map[string]string{annSignature: strings.Repeat("A", maxBase64+4)}}
	if f := v.Verify(context.Background(), img, sig); f.Verified || !strings.Contains(f.Error, "over the") {
		t.Errorf("base64 cap: %+v", f)
	}
	fx := loadFixtures(t, "testdata")
	chain := strings.Repeat(string(fx.inter), maxChainCerts)
	_, a := fx.artifact(t, "cert-sig")
	a.Annotations[annChain] = chain
	if f := v.Verify(context.Background(), img, a); f.Verified || !strings.Contains(f.Error, "too many certificates") {
		t.Errorf("chain cap: %+v", f)
	}
	if f := v.Verify(context.Background(), img, trust.Artifact{Format: trust.FormatNotation}); f.Verified || f.Error == "" {
		t.Errorf("notation: %+v", f)
	}
}

func TestSimpleSigningType(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	v, _ := New(Config{Keys: [][]byte{pubPEM(t, ec.Public())}})
	img := trust.Image{Digest: digest.FromString("image")}
	sig := func(typ string) trust.Artifact {
		p := fmt.Sprintf(`{"critical":{"identity":{"docker-reference":"example.com/a"},"image":{"docker-manifest-digest":%q},"type":%q},"optional":null}`, img.Digest, typ)
		return trust.Artifact{Format: trust.FormatSimpleSigning, Payload: []byte(p),
			Annotations: map[string]string{annSignature: base64.StdEncoding.EncodeToString(signBytes(t, ec, []byte(p)))}}
	}
	if f := v.Verify(context.Background(), img, sig(simpleSigningType)); !f.Verified || f.DockerReference != "example.com/a" {
		t.Errorf("simple signing: %+v", f)
	}
	// the type check: a signed payload of another kind (atomic container
	// signature, anything else the key signed) is not a cosign signature
	if f := v.Verify(context.Background(), img, sig("atomic container signature")); f.Verified || !strings.Contains(f.Error, "payload type") {
		t.Errorf("another type: %+v", f)
	}
}

// One Verifier serves many goroutines (run with -race).
func TestConcurrentVerify(t *testing.T) {
	fx := loadFixtures(t, "testdata")
	v, err := New(Config{Keys: [][]byte{fx.signerPub}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan trust.Finding)
	for i := 0; i < 8; i++ {
		name := []string{"key-bundle", "key-sig", "cert-bundle", "cert-sig"}[i%4]
		img, a := fx.artifact(t, name)
		go func() { done <- v.Verify(context.Background(), img, a) }()
	}
	for i := 0; i < 8; i++ {
		if f := <-done; !f.Verified {
			t.Errorf("%+v", f)
		}
	}
}
