package integration

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
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/notaryproject/notation-core-go/signature/cose" // registers the COSE envelope
	_ "github.com/notaryproject/notation-core-go/signature/jws"  // registers the JWS envelope
	notationgo "github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/signer"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// NotationTrustSuite: images signed with notation-go's signer (JWS and COSE
// envelopes, a code-signing leaf of a CA made here) and pushed as notation
// pushes to a registry without the referrers API — the real distribution
// v3.1.2 registry: a signature manifest with the subject, then the tag
// schema's sha256-<hex> index listing it. A notationSigned policy judges
// them through wharfd.
type NotationTrustSuite struct {
	suiteFixture
	reg         *testregistry.Registry
	d           *Daemon
	ca, otherCA *notaryCA
}

func TestNotationTrustSuite(t *testing.T) { t.Parallel(); runSuite(t, &NotationTrustSuite{}) }

const (
	notationArtifactType = "application/vnd.cncf.notary.signature"
	notationThumbprints  = "io.cncf.notary.x509chain.thumbprint#S256"
	notationIdentity     = "x509.subject: C=US, ST=WA, O=wharf-test, CN=signer"
)

var notationSigner = pkix.Name{Country: []string{"US"}, Province: []string{"WA"}, Organization: []string{"wharf-test"}, CommonName: "signer"}

// notaryCA is a root that issues code-signing leaves, as notation wants
// them (after trust/notation/pki_test.go).
type notaryCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newNotaryKey(c *check.C) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	c.Assert(err, check.IsNil)
	return k
}

func notarySerial(c *check.C) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	c.Assert(err, check.IsNil)
	return n
}

func newNotaryCA(c *check.C, cn string) *notaryCA {
	key := newNotaryKey(c)
	tmpl := &x509.Certificate{
		SerialNumber:          notarySerial(c),
		Subject:               pkix.Name{Country: []string{"US"}, Province: []string{"WA"}, Organization: []string{"wharf-test"}, CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	c.Assert(err, check.IsNil)
	cert, err := x509.ParseCertificate(der)
	c.Assert(err, check.IsNil)
	return &notaryCA{cert: cert, key: key}
}

// writePEM writes the CA certificate to dir/name.pem and returns the path.
func (ca *notaryCA) writePEM(c *check.C, dir, name string) string {
	p := filepath.Join(dir, name+".pem")
	c.Assert(os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o644), check.IsNil)
	return p
}

// leaf issues a code-signing leaf (digitalSignature, EKU codeSigning).
func (ca *notaryCA) leaf(c *check.C, subject pkix.Name) (*x509.Certificate, crypto.Signer) {
	key := newNotaryKey(c)
	tmpl := &x509.Certificate{
		SerialNumber:          notarySerial(c),
		Subject:               subject,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	c.Assert(err, check.IsNil)
	cert, err := x509.ParseCertificate(der)
	c.Assert(err, check.IsNil)
	return cert, key
}

func (s *NotationTrustSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.ca = newNotaryCA(c, "wharf notation root")
	s.otherCA = newNotaryCA(c, "wharf other root")
	dir := c.MkDir()
	caPath, otherPath := s.ca.writePEM(c, dir, "ca"), s.otherCA.writePEM(c, dir, "other")
	req := func(ca, identity string) string {
		return fmt.Sprintf(`[{"type":"notationSigned","trustStore":{"caPaths":[%q]},"trustedIdentities":[%q],"signatureVerification":{"level":"strict"}}]`, ca, identity)
	}
	policy := filepath.Join(dir, "policy.json")
	p := fmt.Sprintf(`{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker":{%q:%s,%q:%s,%q:%s}}}`,
		s.reg.Host+"/notation/ok", req(caPath, notationIdentity),
		s.reg.Host+"/notation/otherca", req(otherPath, notationIdentity),
		s.reg.Host+"/notation/otherid", req(caPath, "x509.subject: C=US, ST=WA, O=wharf-test, CN=someone else"))
	c.Assert(os.WriteFile(policy, []byte(p), 0o600), check.IsNil)
	s.d = s.startDaemon(c, "--signature-policy", policy)
}

// notationSignature signs img's manifest descriptor with a leaf of ca in
// the envelope mediaType and returns the signature manifest and its
// blobs, as notation builds them.
func notationSignature(c *check.C, ca *notaryCA, img *testregistry.Image, mediaType string) (manifest testregistry.Blob, blobs []testregistry.Blob) {
	leaf, key := ca.leaf(c, notationSigner)
	sg, err := signer.NewGenericSigner(key, []*x509.Certificate{leaf, ca.cert})
	c.Assert(err, check.IsNil)
	target := img.Manifest.Descriptor()
	env, _, err := sg.Sign(context.Background(), target, notationgo.SignerSignOptions{SignatureMediaType: mediaType})
	c.Assert(err, check.IsNil)
	var prints []string
	for _, cert := range []*x509.Certificate{leaf, ca.cert} {
		sum := sha256.Sum256(cert.Raw)
		prints = append(prints, hex.EncodeToString(sum[:]))
	}
	tp, _ := json.Marshal(prints)
	config := testregistry.NewBlob(ocispec.MediaTypeEmptyJSON, []byte("{}"))
	layer := testregistry.NewBlob(mediaType, env)
	m := ocispec.Manifest{
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: notationArtifactType,
		Config:       config.Descriptor(),
		Layers:       []ocispec.Descriptor{layer.Descriptor()},
		Subject:      &target,
		Annotations: map[string]string{
			notationThumbprints:          string(tp),
			"io.cncf.notary.signingTime": time.Now().UTC().Format(time.RFC3339),
		},
	}
	m.SchemaVersion = 2
	b, err := json.Marshal(m)
	c.Assert(err, check.IsNil)
	return testregistry.NewBlob(ocispec.MediaTypeImageManifest, b), []testregistry.Blob{config, layer}
}

// pushNotation pushes the signature manifest into repo and lists it in the
// tag-schema index of subject (sha256-<hex>), as notation does on a
// registry without the referrers API.
func (s *NotationTrustSuite) pushNotation(c *check.C, repo string, subject string, manifest testregistry.Blob, blobs []testregistry.Blob) {
	ctx, cancel := fixtureCtx()
	defer cancel()
	cl := s.reg.Client()
	for _, b := range blobs {
		c.Assert(cl.PutBlob(ctx, repo, b), check.IsNil)
	}
	c.Assert(cl.PutManifest(ctx, repo, manifest.Digest, manifest), check.IsNil)
	var m ocispec.Manifest
	c.Assert(json.Unmarshal(manifest.Data, &m), check.IsNil)
	d := manifest.Descriptor()
	d.ArtifactType = m.ArtifactType
	d.Annotations = m.Annotations
	ix := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{d}}
	ix.SchemaVersion = 2
	b, err := json.Marshal(ix)
	c.Assert(err, check.IsNil)
	tag := strings.Replace(subject, ":", "-", 1)
	c.Assert(cl.PutManifest(ctx, repo, tag, testregistry.NewBlob(ocispec.MediaTypeImageIndex, b)), check.IsNil)
}

func (s *NotationTrustSuite) inspect(c *check.C, repo string) trustAnswer {
	var a trustAnswer
	s.d.Get(c, "/v1.50/images/"+s.reg.Host+"/"+repo+":1/json?remote=1").JSON(c, &a)
	return a
}

func (s *NotationTrustSuite) TestNotationSignatures(c *check.C) {
	for _, tc := range []struct {
		repo, mediaType, decision, err string
	}{
		{"notation/ok/jws", "application/jose+json", "accepted", ""},
		{"notation/ok/cose", "application/cose", "accepted", ""},
		// the trust-store check: the chain leads to s.ca, the policy
		// trusts only another CA.
		{"notation/otherca/app", "application/jose+json", "rejected", "certificate chain does not lead to a trust store certificate"},
		// the trusted-identity check: the leaf's subject is CN=signer, the
		// policy trusts only CN=someone else.
		{"notation/otherid/app", "application/cose", "rejected", "signing identity CN=signer,O=wharf-test,ST=WA,C=US is not trusted"},
	} {
		img := pushImage(c, s.reg, tc.repo, "1", testregistry.ImageOptions{})
		m, blobs := notationSignature(c, s.ca, img, tc.mediaType)
		s.pushNotation(c, tc.repo, img.Manifest.Digest, m, blobs)
		a := s.inspect(c, tc.repo)
		cm := check.Commentf("%s: %+v", tc.repo, a.Trust)
		c.Check(a.Trust.Decision, check.Equals, tc.decision, cm)
		c.Check(a.Trust.Requirement, check.Equals, "notationSigned", cm)
		c.Assert(a.Trust.Signatures, check.HasLen, 1, cm)
		c.Check(a.Trust.Signatures[0].Format, check.Equals, "notation", cm)
		c.Check(a.Trust.Signatures[0].SignatureType, check.Equals, "notation", cm)
		c.Check(a.Trust.Signatures[0].Verified, check.Equals, tc.decision == "accepted", cm)
		c.Check(a.Trust.Signatures[0].Error, check.Equals, tc.err, cm)
	}
	// Refused on pull, before any layer; an accepted one pulls.
	for _, repo := range []string{"notation/otherca/app", "notation/otherid/app"} {
		r := s.d.Wharf(c, "pull", s.reg.Host+"/"+repo+":1")
		c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
		c.Check(r.Stderr, check.Matches, `(?s).*refused by the signature policy: .*notationSigned.*`)
	}
	s.d.WharfOK(c, "pull", s.reg.Host+"/notation/ok/jws:1")
	out := s.d.WharfOK(c, "inspect", "-f", "{{.Trust.Decision}}", s.reg.Host+"/notation/ok/jws:1")
	c.Check(strings.TrimSpace(out.Stdout), check.Equals, "accepted")
}

// A valid signature of image A, listed in image B's tag-schema index, is
// refused for B: the subject check (the signature manifest's subject is A,
// not B) — the envelope itself verifies under the policy's CA and identity.
func (s *NotationTrustSuite) TestSignatureOfAnotherImageIsRefused(c *check.C) {
	repo := "notation/ok/swapped"
	a := pushImage(c, s.reg, repo, "a", testregistry.ImageOptions{})
	b := pushImage(c, s.reg, repo, "1", testregistry.ImageOptions{})
	m, blobs := notationSignature(c, s.ca, a, "application/jose+json")
	s.pushNotation(c, repo, b.Manifest.Digest, m, blobs)

	got := s.inspect(c, repo)
	cm := check.Commentf("%+v", got.Trust)
	c.Check(got.Trust.Decision, check.Equals, "rejected", cm)
	c.Assert(got.Trust.Signatures, check.HasLen, 1, cm)
	c.Check(got.Trust.Signatures[0].Verified, check.Equals, false, cm)
	c.Check(got.Trust.Signatures[0].Error, check.Matches, `.*subject.*`+digest.Digest(a.Manifest.Digest).Encoded()+`.*`, cm)

	r := s.d.Wharf(c, "pull", s.reg.Host+"/"+repo+":1")
	c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Check(r.Stderr, check.Matches, `(?s).*refused by the signature policy: .*`)

	// The same signature in A's own index is accepted: the refusal above
	// is the subject's, not the signature's.
	s.pushNotation(c, repo, a.Manifest.Digest, m, blobs)
	var ok trustAnswer
	s.d.Get(c, "/v1.50/images/"+s.reg.Host+"/"+repo+":a/json?remote=1").JSON(c, &ok)
	c.Check(ok.Trust.Decision, check.Equals, "accepted", check.Commentf("%+v", ok.Trust))
}
