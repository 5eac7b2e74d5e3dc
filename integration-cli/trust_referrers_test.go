package integration

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// ReferrersTrustSuite: a cosign 3 bundle pushed by the real cosign to a
// registry WITH the OCI 1.1 referrers API (go-containerregistry's
// in-process registry; distribution v3.1.2 has none), so cosign attaches
// it as a referrer (subject) rather than in the tag schema, and wharfd
// finds it through GET /v2/<repo>/referrers/<digest>. Accepted by the
// signing key, rejected by another key.
type ReferrersTrustSuite struct {
	suiteFixture
	reg    *specReferrersRegistry
	d      *Daemon
	cosign string
	keys   string
}

func TestReferrersTrustSuite(t *testing.T) { t.Parallel(); runSuite(t, &ReferrersTrustSuite{}) }

// cosignBinary is .cache/bin/cosign, or skips (fails under CI) as
// CosignTrustSuite does.
func cosignBinary(c *check.C) string {
	root, err := testregistry.RepoRoot()
	c.Assert(err, check.IsNil)
	bin := filepath.Join(root, ".cache", "bin", "cosign")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			c.Fatalf("cosign is missing: make test builds it (make cosign)")
		}
		c.Skip("cosign not built: run make cosign")
	}
	return bin
}

// runCosign runs cosign in dir without the user's config, keychain or a
// terminal.
func runCosign(c *check.C, bin, dir string, args ...string) string {
	home := c.MkDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+home, "COSIGN_PASSWORD=", "COSIGN_YES=true")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	c.Assert(err, check.IsNil, check.Commentf("cosign %s:\n%s", strings.Join(args, " "), out))
	return string(out)
}

// cosignSignArgs are the offline flags every test signature uses.
var cosignSignArgs = []string{"sign", "--tlog-upload=false", "--use-signing-config=false",
	"--allow-insecure-registry", "--allow-http-registry"}

func (s *ReferrersTrustSuite) SetUpSuite(c *check.C) {
	needBinaries(c)
	s.cosign = cosignBinary(c)
	s.reg = startSpecReferrersRegistry(c)
	s.closeAtEnd(s.reg.Close)
	s.keys = c.MkDir()
	for _, k := range []string{"signer", "other"} {
		runCosign(c, s.cosign, s.keys, "generate-key-pair", "--output-key-prefix", filepath.Join(s.keys, k))
	}
	policy := filepath.Join(c.MkDir(), "policy.json")
	p := fmt.Sprintf(`{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker":{
	  %q:[{"type":"sigstoreSigned","keyPath":%q}],
	  %q:[{"type":"sigstoreSigned","keyPath":%q}]}}}`,
		s.reg.Host+"/ref/signed", filepath.Join(s.keys, "signer.pub"),
		s.reg.Host+"/ref/otherkey", filepath.Join(s.keys, "other.pub"))
	c.Assert(os.WriteFile(policy, []byte(p), 0o600), check.IsNil)
	s.d = s.startDaemon(c, "--signature-policy", policy)
}

// specReferrersRegistry is go-containerregistry's in-process registry with
// the referrers API on, behind a request counter, unchanged. ggcr v0.22.1
// lists a referrer by its config's media type, which for cosign's bundle
// manifest (config: the empty descriptor, artifactType on the manifest) is
// application/vnd.oci.empty.v1+json: wharf reads such a referrer's
// manifest to learn what it is (registry/signatures.go). Before, it found
// no signature on this registry.
type specReferrersRegistry struct {
	Host    string
	Counter *testregistry.Counter
	srv     *httptest.Server
}

func startSpecReferrersRegistry(c *check.C) *specReferrersRegistry {
	inner := ggcrregistry.New(ggcrregistry.WithReferrersSupport(true), ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(inner)
	cnt, err := testregistry.NewCounter(srv.URL)
	if err != nil {
		srv.Close()
		c.Fatal(err)
	}
	return &specReferrersRegistry{Host: cnt.Host, Counter: cnt, srv: srv}
}

func (r *specReferrersRegistry) Client() *testregistry.Client {
	return &testregistry.Client{Base: r.Counter.URL}
}

func (r *specReferrersRegistry) Close() {
	r.Counter.Close()
	r.srv.CloseClientConnections()
	r.srv.Close()
}

func (s *ReferrersTrustSuite) push(c *check.C, repo string) *testregistry.Image {
	img, err := testregistry.NewImage(testregistry.ImageOptions{})
	c.Assert(err, check.IsNil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, repo, "1", img), check.IsNil)
	return img
}

func (s *ReferrersTrustSuite) TestCosignBundleAsReferrer(c *check.C) {
	for _, tc := range []struct {
		repo     string
		decision string
	}{
		{"ref/signed/app", "accepted"},
		// the key check: the same kind of signature, but the policy's key
		// is another one, so the bundle's signature does not verify.
		{"ref/otherkey/app", "rejected"},
	} {
		img := s.push(c, tc.repo)
		s.reg.Counter.Reset()
		args := append(append([]string{}, cosignSignArgs...), "--key", filepath.Join(s.keys, "signer.key"),
			"--new-bundle-format=true", s.reg.Host+"/"+tc.repo+"@"+img.Manifest.Digest)
		runCosign(c, s.cosign, s.keys, args...)
		// cosign attached the bundle as a referrer: no tag-schema index.
		pushed := strings.Join(s.reg.Counter.Requests(), "\n")
		c.Check(strings.Contains(pushed, "/manifests/sha256-"), check.Equals, false, check.Commentf("cosign used the tag schema:\n%s", pushed))

		s.reg.Counter.Reset()
		var a trustAnswer
		s.d.Get(c, "/v1.50/images/"+s.reg.Host+"/"+tc.repo+":1/json?remote=1").JSON(c, &a)
		cm := check.Commentf("%s: %+v\nrequests:\n%s", tc.repo, a.Trust, strings.Join(s.reg.Counter.Requests(), "\n"))
		// wharfd found the signature through the referrers API.
		c.Check(s.reg.Counter.Count("GET referrers") > 0, check.Equals, true, cm)
		c.Check(a.Trust.Decision, check.Equals, tc.decision, cm)
		c.Check(a.Trust.Requirement, check.Equals, "sigstoreSigned", cm)
		c.Assert(a.Trust.Signatures, check.HasLen, 1, cm)
		c.Check(a.Trust.Signatures[0].Format, check.Equals, "sigstore-bundle", cm)
		c.Check(a.Trust.Signatures[0].Verified, check.Equals, tc.decision == "accepted", cm)
	}
	// The rejected one is refused on pull; the accepted one pulls.
	r := s.d.Wharf(c, "pull", s.reg.Host+"/ref/otherkey/app:1")
	c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Check(r.Stderr, check.Matches, `(?s).*refused by the signature policy: .*`)
	s.d.WharfOK(c, "pull", s.reg.Host+"/ref/signed/app:1")
}
