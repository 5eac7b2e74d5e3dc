package notation

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	notationgo "github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/signer"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// testCA is a root that issues code-signing leaves, as notation wants them.
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

var serial int64

func newSerial() *big.Int { serial++; return big.NewInt(serial) }

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newCA(t testing.TB, cn string) *testCA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{Country: []string{"US"}, Province: []string{"WA"}, Organization: []string{"wharf test"}, CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key}
}

func (ca *testCA) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// leaf issues a code-signing leaf (digitalSignature, EKU codeSigning) for
// the subject, valid until notAfter.
func (ca *testCA) leaf(t testing.TB, subject pkix.Name, notAfter time.Time) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               subject,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

var signerSubject = pkix.Name{Country: []string{"US"}, Province: []string{"WA"}, Organization: []string{"wharf test"}, CommonName: "release signer"}

// sign signs a manifest descriptor of d with notation-go's generic signer,
// in the media type's envelope, and returns the envelope and the
// manifest's thumbprint annotation.
func sign(t testing.TB, ca *testCA, leafNotAfter time.Time, d digest.Digest, mediaType string, expiry time.Duration) ([]byte, map[string]string) {
	t.Helper()
	leaf, key := ca.leaf(t, signerSubject, leafNotAfter)
	s, err := signer.NewGenericSigner(key, []*x509.Certificate{leaf, ca.cert})
	if err != nil {
		t.Fatal(err)
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: d, Size: 1234}
	env, _, err := s.Sign(context.Background(), desc, notationgo.SignerSignOptions{SignatureMediaType: mediaType, ExpiryDuration: expiry})
	if err != nil {
		t.Fatal(err)
	}
	var prints []string
	for _, c := range []*x509.Certificate{leaf, ca.cert} {
		sum := sha256.Sum256(c.Raw)
		prints = append(prints, hex.EncodeToString(sum[:]))
	}
	b, _ := json.Marshal(prints)
	return env, map[string]string{AnnotationThumbprints: string(b)}
}
