package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// CosignTrustSuite: images signed by the real cosign v3 (built by `make
// cosign` into .cache/bin, as the registry is) against the real registry,
// judged by a sigstoreSigned policy through wharfd: a cosign 3 bundle (the
// tag schema: distribution v3.1.2 has no referrers API) and a legacy .sig
// are accepted by the matching key, rejected by another key; an unsigned
// image's pull is refused.
type CosignTrustSuite struct {
	suiteFixture
	reg    *testregistry.Registry
	d      *Daemon
	cosign string
	keys   string // signer.key/.pub, other.key/.pub
}

func TestCosignTrustSuite(t *testing.T) { t.Parallel(); runSuite(t, &CosignTrustSuite{}) }

func (s *CosignTrustSuite) SetUpSuite(c *check.C) {
	root, err := testregistry.RepoRoot()
	c.Assert(err, check.IsNil)
	s.cosign = filepath.Join(root, ".cache", "bin", "cosign")
	if _, err := os.Stat(s.cosign); err != nil {
		if os.Getenv("CI") == "true" {
			c.Fatalf("cosign is missing: make test builds it (make cosign)")
		}
		c.Skip("cosign not built: run make cosign")
	}
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.keys = c.MkDir()
	for _, k := range []string{"signer", "other"} {
		s.run(c, "generate-key-pair", "--output-key-prefix", filepath.Join(s.keys, k))
	}
	policy := filepath.Join(c.MkDir(), "policy.json")
	p := fmt.Sprintf(`{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker":{
	  %q:[{"type":"sigstoreSigned","keyPath":%q,"signedIdentity":{"type":"matchRepository"}}],
	  %q:[{"type":"sigstoreSigned","keyPath":%q}]}}}`,
		s.reg.Host+"/signed", filepath.Join(s.keys, "signer.pub"),
		s.reg.Host+"/otherkey", filepath.Join(s.keys, "other.pub"))
	c.Assert(os.WriteFile(policy, []byte(p), 0o600), check.IsNil)
	s.d = s.startDaemon(c, "--signature-policy", policy)
}

// run runs cosign without the user's config, keychain or a terminal.
func (s *CosignTrustSuite) run(c *check.C, args ...string) string {
	home := c.MkDir()
	cmd := exec.Command(s.cosign, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+home, "COSIGN_PASSWORD=", "COSIGN_YES=true")
	cmd.Dir = s.keys
	out, err := cmd.CombinedOutput()
	c.Assert(err, check.IsNil, check.Commentf("cosign %s:\n%s", strings.Join(args, " "), out))
	return string(out)
}

// sign pushes an image to repo:1 and signs its digest with key.
func (s *CosignTrustSuite) sign(c *check.C, repo, key string, bundle bool) *testregistry.Image {
	img := pushImage(c, s.reg, repo, "1", testregistry.ImageOptions{})
	s.run(c, "sign", "--key", filepath.Join(s.keys, key+".key"), "--tlog-upload=false", "--use-signing-config=false",
		"--allow-insecure-registry", "--allow-http-registry", fmt.Sprintf("--new-bundle-format=%v", bundle),
		s.reg.Host+"/"+repo+"@"+img.Manifest.Digest)
	return img
}

type trustAnswer struct {
	Trust struct {
		Decision, Scope, Requirement, Reason string
		Signatures                           []struct {
			Format, SignatureType, Error string
			Verified                     bool
		}
	}
	Identity *struct {
		Signature []struct{ SignatureType string }
	}
}

func (s *CosignTrustSuite) inspect(c *check.C, name string) trustAnswer {
	var a trustAnswer
	s.d.Get(c, "/v1.50/images/"+name+"/json?remote=1").JSON(c, &a)
	return a
}

func (s *CosignTrustSuite) TestCosignBundleAndLegacySignatureVerify(c *check.C) {
	for _, tc := range []struct {
		repo, key string
		bundle    bool
		decision  string
		format    string
	}{
		{"signed/bundle", "signer", true, "accepted", "sigstore-bundle"},
		{"signed/legacy", "signer", false, "accepted", "cosign-simplesigning"},
		{"signed/wrongkey", "other", true, "rejected", "sigstore-bundle"},
		{"otherkey/app", "signer", false, "rejected", "cosign-simplesigning"},
	} {
		s.sign(c, tc.repo, tc.key, tc.bundle)
		a := s.inspect(c, s.reg.Host+"/"+tc.repo+":1")
		cm := check.Commentf("%s: %+v", tc.repo, a.Trust)
		c.Check(a.Trust.Decision, check.Equals, tc.decision, cm)
		c.Check(a.Trust.Requirement, check.Equals, "sigstoreSigned", cm)
		c.Assert(len(a.Trust.Signatures) > 0, check.Equals, true, cm)
		c.Check(a.Trust.Signatures[0].Format, check.Equals, tc.format, cm)
		c.Check(a.Trust.Signatures[0].Verified, check.Equals, tc.decision == "accepted", cm)
		if tc.decision == "accepted" {
			c.Assert(a.Identity, check.NotNil, cm)
			c.Check(a.Identity.Signature, check.HasLen, 1, cm)
		}
	}
	// Refused before any layer: an unsigned image under the signed scope,
	// and one signed by the wrong key.
	pushImage(c, s.reg, "signed/unsigned", "1", testregistry.ImageOptions{})
	for _, repo := range []string{"signed/unsigned", "signed/wrongkey"} {
		r := s.d.Docker(c, "pull", s.reg.Host+"/"+repo+":1")
		c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
		c.Check(r.Stderr, check.Matches, `(?s).*refused by the signature policy: .*sigstoreSigned.*`)
	}
	// An accepted one pulls and records its verdict.
	s.d.WharfOK(c, "pull", s.reg.Host+"/signed/bundle:1")
	out := s.d.WharfOK(c, "inspect", "-f", "{{.Trust.Decision}} {{len .Identity.Signature}}", s.reg.Host+"/signed/bundle:1")
	c.Check(strings.TrimSpace(out.Stdout), check.Equals, "accepted 1")
}
