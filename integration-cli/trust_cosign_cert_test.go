package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// CosignCertTrustSuite: the real cosign signs with a key AND a certificate
// of a test CA (--certificate leaf.pem --certificate-chain chain.pem, the
// PKI trust/sigstore/testdata/gencerts makes: root → intermediate → leaf
// with the e-mail SAN signer@example.com and the Fulcio OIDC-issuer
// extensions for https://issuer.example.com). wharfd judges the signatures
// under sigstoreSigned with pki (your own CA) and with fulcio.
//
// fulcio requires a Rekor key (containers' rule), and a Rekor key makes a
// transparency-log entry mandatory; cosign signs offline here
// (--tlog-upload=false), so the fulcio signatures are legacy .sig ones to
// which the test adds a Rekor bundle annotation signed by a Rekor key made
// here (what cosign writes after an upload: the SET over the entry).
type CosignCertTrustSuite struct {
	suiteFixture
	reg    *testregistry.Registry
	d      *Daemon
	cosign string
	keys   string // signer.key/.pub
	pki    string // leaf.pem, chain.pem, root.pem, intermediate.pem, other-root.pem
	rekor  *ecdsa.PrivateKey
}

func TestCosignCertTrustSuite(t *testing.T) { t.Parallel(); runSuite(t, &CosignCertTrustSuite{}) }

const (
	certEmail  = "signer@example.com"
	certIssuer = "https://issuer.example.com"
	certHost   = "signer.example.com" // gencerts' leaf-host.pem and leaf-tls.pem
)

func (s *CosignCertTrustSuite) SetUpSuite(c *check.C) {
	s.cosign = cosignBinary(c)
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.keys = c.MkDir()
	runCosign(c, s.cosign, s.keys, "generate-key-pair", "--output-key-prefix", filepath.Join(s.keys, "signer"))

	// The test PKI for cosign's key, with gen.sh's generator.
	root, err := testregistry.RepoRoot()
	c.Assert(err, check.IsNil)
	gencerts := filepath.Join(c.MkDir(), "gencerts")
	build := exec.Command("go", "build", "-o", gencerts, "./testdata/gencerts")
	build.Dir = filepath.Join(root, "trust", "sigstore")
	out, err := build.CombinedOutput()
	c.Assert(err, check.IsNil, check.Commentf("%s", out))
	s.pki = c.MkDir()
	out, err = exec.Command(gencerts, filepath.Join(s.keys, "signer.pub"), s.pki).CombinedOutput()
	c.Assert(err, check.IsNil, check.Commentf("%s", out))
	rd := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(s.pki, name))
		c.Assert(err, check.IsNil)
		return b
	}
	fulcioCA := filepath.Join(s.pki, "fulcio-ca.pem")
	c.Assert(os.WriteFile(fulcioCA, append(rd("root.pem"), rd("intermediate.pem")...), 0o644), check.IsNil)

	s.rekor, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	c.Assert(err, check.IsNil)
	der, err := x509.MarshalPKIXPublicKey(s.rekor.Public())
	c.Assert(err, check.IsNil)
	rekorPub := filepath.Join(s.pki, "rekor.pub")
	c.Assert(os.WriteFile(rekorPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644), check.IsNil)

	p := func(name string) string { return filepath.Join(s.pki, name) }
	// matchRepository: cosign's legacy signature names the repository
	// without a tag (see trust/policy's doc), and the default
	// matchRepoDigestOrExact refuses that for a tagged name.
	pki := func(roots, email string) string {
		return fmt.Sprintf(`[{"type":"sigstoreSigned","pki":{"caRootsPath":%q,"caIntermediatesPath":%q,"subjectEmail":%q},"signedIdentity":{"type":"matchRepository"}}]`,
			p(roots), p("intermediate.pem"), email)
	}
	fulcio := func(issuer string) string {
		return fmt.Sprintf(`[{"type":"sigstoreSigned","fulcio":{"caPath":%q,"oidcIssuer":%q,"subjectEmail":%q},"rekorPublicKeyPath":%q,"signedIdentity":{"type":"matchRepository"}}]`,
			fulcioCA, issuer, certEmail, rekorPub)
	}
	pkiHost := fmt.Sprintf(`[{"type":"sigstoreSigned","pki":{"caRootsPath":%q,"caIntermediatesPath":%q,"subjectHostname":%q},"signedIdentity":{"type":"matchRepository"}}]`,
		p("root.pem"), p("intermediate.pem"), certHost)
	h := s.reg.Host + "/cert/"
	policy := filepath.Join(c.MkDir(), "policy.json")
	pol := fmt.Sprintf(`{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker":{
	  %q:%s, %q:%s, %q:%s, %q:%s, %q:%s, %q:%s}}}`,
		h+"pkihost", pkiHost,
		h+"pki", pki("root.pem", certEmail),
		h+"pkiemail", pki("root.pem", "someone@example.com"),
		h+"pkiroot", pki("other-root.pem", certEmail),
		h+"fulcio", fulcio(certIssuer),
		h+"fulcioissuer", fulcio("https://other-issuer.example.com"))
	c.Assert(os.WriteFile(policy, []byte(pol), 0o600), check.IsNil)
	s.d = s.startDaemon(c, "--signature-policy", policy)
}

// sign pushes repo:1 and signs it with the key and the leaf certificate.
func (s *CosignCertTrustSuite) sign(c *check.C, repo string, bundle bool) *testregistry.Image {
	return s.signWith(c, repo, "leaf.pem", bundle)
}

// signWith signs with the key and the certificate leaf of s.pki.
func (s *CosignCertTrustSuite) signWith(c *check.C, repo, leaf string, bundle bool) *testregistry.Image {
	img := pushImage(c, s.reg, repo, "1", testregistry.ImageOptions{})
	args := append(append([]string{}, cosignSignArgs...), "--key", filepath.Join(s.keys, "signer.key"),
		"--certificate", filepath.Join(s.pki, leaf), "--certificate-chain", filepath.Join(s.pki, "chain.pem"),
		fmt.Sprintf("--new-bundle-format=%v", bundle), s.reg.Host+"/"+repo+"@"+img.Manifest.Digest)
	runCosign(c, s.cosign, s.keys, args...)
	return img
}

// addRekorEntry gives the legacy .sig of img a Rekor bundle annotation: a
// hashedrekord entry naming the signature, with a signed entry timestamp
// by s.rekor, integrated now.
func (s *CosignCertTrustSuite) addRekorEntry(c *check.C, repo string, img *testregistry.Image) {
	ctx, cancel := fixtureCtx()
	defer cancel()
	cl := s.reg.Client()
	tag := strings.Replace(img.Manifest.Digest, ":", "-", 1) + ".sig"
	body, mediaType, _, err := cl.GetManifest(ctx, repo, tag)
	c.Assert(err, check.IsNil)
	var m ocispec.Manifest
	c.Assert(json.Unmarshal(body, &m), check.IsNil)
	c.Assert(m.Layers, check.HasLen, 1)
	sig := m.Layers[0].Annotations["dev.cosignproject.cosign/signature"]
	c.Assert(sig, check.Not(check.Equals), "")

	der, _ := x509.MarshalPKIXPublicKey(s.rekor.Public())
	logID := fmt.Sprintf("%x", sha256.Sum256(der))
	at := time.Now().Unix()
	entry := []byte(fmt.Sprintf(`{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{"signature":{"content":%q}}}`, sig))
	canon := fmt.Sprintf(`{"body":%q,"integratedTime":%d,"logID":%q,"logIndex":%d}`,
		base64.StdEncoding.EncodeToString(entry), at, logID, 42)
	sum := sha256.Sum256([]byte(canon))
	set, err := s.rekor.Sign(rand.Reader, sum[:], nil)
	c.Assert(err, check.IsNil)
	rb, err := json.Marshal(map[string]any{"SignedEntryTimestamp": set, "Payload": map[string]any{
		"body": base64.StdEncoding.EncodeToString(entry), "integratedTime": at, "logIndex": 42, "logID": logID}})
	c.Assert(err, check.IsNil)
	m.Layers[0].Annotations["dev.sigstore.cosign/bundle"] = string(rb)
	nb, err := json.Marshal(m)
	c.Assert(err, check.IsNil)
	c.Assert(cl.PutManifest(ctx, repo, tag, testregistry.NewBlob(mediaType, nb)), check.IsNil)
}

func (s *CosignCertTrustSuite) TestCertificateSignatures(c *check.C) {
	for _, tc := range []struct {
		repo     string
		bundle   bool
		rekor    bool
		decision string
		err      string // the finding's Error, in part
	}{
		{"cert/pki/bundle", true, false, "accepted", ""},
		{"cert/pki/legacy", false, false, "accepted", ""},
		// the identity check: the leaf's e-mail is signer@, the policy
		// wants someone@.
		{"cert/pkiemail/app", true, false, "rejected", "subject email signer@example.com is not the required someone@example.com"},
		// the chain check: the leaf chains to the test root, the policy's
		// root is another one.
		{"cert/pkiroot/app", true, false, "rejected", "certificate chains to no configured PKI root"},
		{"cert/fulcio/app", false, true, "accepted", ""},
		// the Rekor check: with a Rekor key (fulcio needs one) a signature
		// without a transparency-log entry does not verify.
		{"cert/fulcio/notlog", false, false, "rejected", "signature has no transparency-log entry"},
		// the OIDC-issuer check: the leaf's issuer extension says
		// https://issuer.example.com, the policy wants another issuer.
		{"cert/fulcioissuer/app", false, true, "rejected", "OIDC issuer https://issuer.example.com is not the required https://other-issuer.example.com"},
	} {
		img := s.sign(c, tc.repo, tc.bundle)
		if tc.rekor {
			s.addRekorEntry(c, tc.repo, img)
		}
		var a trustAnswer
		s.d.Get(c, "/v1.50/images/"+s.reg.Host+"/"+tc.repo+":1/json?remote=1").JSON(c, &a)
		cm := check.Commentf("%s: %+v", tc.repo, a.Trust)
		c.Check(a.Trust.Decision, check.Equals, tc.decision, cm)
		c.Check(a.Trust.Requirement, check.Equals, "sigstoreSigned", cm)
		c.Assert(a.Trust.Signatures, check.HasLen, 1, cm)
		c.Logf("%s: %s %q", tc.repo, a.Trust.Decision, a.Trust.Signatures[0].Error)
		c.Check(a.Trust.Signatures[0].Verified, check.Equals, tc.decision == "accepted", cm)
		if tc.decision == "accepted" {
			c.Check(a.Trust.Signatures[0].Error, check.Equals, "", cm)
		} else {
			c.Check(strings.Contains(a.Trust.Signatures[0].Error, tc.err), check.Equals, true, cm)
		}
	}
	r := s.d.Wharf(c, "pull", s.reg.Host+"/cert/pkiroot/app:1")
	c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Check(r.Stderr, check.Matches, `(?s).*refused by the signature policy: .*`)
	s.d.WharfOK(c, "pull", s.reg.Host+"/cert/pki/bundle:1")
}

// A pki requirement accepts only a certificate issued for code signing,
// as containers/image's does: the same CA's TLS server certificate for the
// required host name (extended key usage serverAuth only) signs nothing,
// in a bundle or a legacy signature, and the pull is refused. Before, any
// extended key usage was accepted, so wharf took what podman refuses.
func (s *CosignCertTrustSuite) TestPKIRequiresCodeSigning(c *check.C) {
	for _, tc := range []struct {
		repo, leaf string
		bundle     bool
		decision   string
	}{
		{"cert/pkihost/codesign", "leaf-host.pem", true, "accepted"},
		{"cert/pkihost/tls", "leaf-tls.pem", true, "rejected"},
		{"cert/pkihost/tlslegacy", "leaf-tls.pem", false, "rejected"},
	} {
		// cosign refuses to sign with a certificate that is not for code
		// signing; one who holds the key signs with the code-signing leaf
		// and ships the TLS leaf for the same key instead (the signature
		// is over the image, not the certificate).
		img := s.signWith(c, tc.repo, "leaf-host.pem", tc.bundle)
		if tc.leaf != "leaf-host.pem" {
			s.swapLeaf(c, tc.repo, img, tc.leaf, tc.bundle)
		}
		var a trustAnswer
		s.d.Get(c, "/v1.50/images/"+s.reg.Host+"/"+tc.repo+":1/json?remote=1").JSON(c, &a)
		cm := check.Commentf("%s: %+v", tc.repo, a.Trust)
		c.Check(a.Trust.Decision, check.Equals, tc.decision, cm)
		c.Check(a.Trust.Scope, check.Equals, s.reg.Host+"/cert/pkihost", cm)
		c.Assert(a.Trust.Signatures, check.HasLen, 1, cm)
		c.Check(a.Trust.Signatures[0].Verified, check.Equals, tc.decision == "accepted", cm)
		if tc.decision == "rejected" {
			c.Check(a.Trust.Signatures[0].Error, check.Equals, "certificate is not for code signing (extended key usage serverAuth)", cm)
		}
	}
	r := s.d.Wharf(c, "pull", s.reg.Host+"/cert/pkihost/tls:1")
	c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Check(r.Stderr, check.Matches, `(?s).*refused by the signature policy: .*not for code signing.*`)
	s.d.WharfOK(c, "pull", s.reg.Host+"/cert/pkihost/codesign:1")
}

// swapLeaf replaces, in the signature cosign wrote for img, the
// certificate leaf-host.pem with leaf (for the same key): in the legacy
// .sig's annotation, or in the bundle, which then gets a new manifest
// listed in the tag-schema index in place of cosign's.
func (s *CosignCertTrustSuite) swapLeaf(c *check.C, repo string, img *testregistry.Image, leaf string, bundle bool) {
	ctx, cancel := fixtureCtx()
	defer cancel()
	cl := s.reg.Client()
	from, err := os.ReadFile(filepath.Join(s.pki, "leaf-host.pem"))
	c.Assert(err, check.IsNil)
	to, err := os.ReadFile(filepath.Join(s.pki, leaf))
	c.Assert(err, check.IsNil)
	tag := strings.Replace(img.Manifest.Digest, ":", "-", 1)
	if !bundle {
		body, mediaType, _, err := cl.GetManifest(ctx, repo, tag+".sig")
		c.Assert(err, check.IsNil)
		var m ocispec.Manifest
		c.Assert(json.Unmarshal(body, &m), check.IsNil)
		c.Assert(m.Layers, check.HasLen, 1)
		c.Assert(m.Layers[0].Annotations["dev.sigstore.cosign/certificate"], check.Equals, string(from))
		m.Layers[0].Annotations["dev.sigstore.cosign/certificate"] = string(to)
		nb, err := json.Marshal(m)
		c.Assert(err, check.IsNil)
		c.Assert(cl.PutManifest(ctx, repo, tag+".sig", testregistry.NewBlob(mediaType, nb)), check.IsNil)
		return
	}
	der := func(p []byte) string {
		blk, _ := pem.Decode(p)
		c.Assert(blk, check.NotNil)
		return base64.StdEncoding.EncodeToString(blk.Bytes)
	}
	body, indexType, _, err := cl.GetManifest(ctx, repo, tag)
	c.Assert(err, check.IsNil)
	var idx ocispec.Index
	c.Assert(json.Unmarshal(body, &idx), check.IsNil)
	c.Assert(idx.Manifests, check.HasLen, 1)
	body, mediaType, _, err := cl.GetManifest(ctx, repo, idx.Manifests[0].Digest.String())
	c.Assert(err, check.IsNil)
	var m ocispec.Manifest
	c.Assert(json.Unmarshal(body, &m), check.IsNil)
	c.Assert(m.Layers, check.HasLen, 1)
	resp, err := http.Get(s.reg.DirectURL + "/v2/" + repo + "/blobs/" + m.Layers[0].Digest.String())
	c.Assert(err, check.IsNil)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.Assert(err, check.IsNil)
	c.Assert(strings.Contains(string(b), der(from)), check.Equals, true, check.Commentf("%s", b))
	nl := testregistry.NewBlob(m.Layers[0].MediaType, []byte(strings.ReplaceAll(string(b), der(from), der(to))))
	c.Assert(cl.PutBlob(ctx, repo, nl), check.IsNil)
	m.Layers[0].Digest, m.Layers[0].Size = digest.Digest(nl.Digest), int64(len(nl.Data))
	nb, err := json.Marshal(m)
	c.Assert(err, check.IsNil)
	nm := testregistry.NewBlob(mediaType, nb)
	c.Assert(cl.PutManifest(ctx, repo, nm.Digest, nm), check.IsNil)
	idx.Manifests[0].Digest, idx.Manifests[0].Size = digest.Digest(nm.Digest), int64(len(nb))
	ib, err := json.Marshal(idx)
	c.Assert(err, check.IsNil)
	c.Assert(cl.PutManifest(ctx, repo, tag, testregistry.NewBlob(indexType, ib)), check.IsNil)
}
