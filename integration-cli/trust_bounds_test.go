package integration

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// SignatureBoundsTrustSuite: an image signed once by the real cosign (a
// bundle, in the tag schema: distribution has no referrers API) beside
// which someone who may push to the repository listed 31 more signature
// manifests of 16 bogus bundles each, 496 in all, every one distinct.
// wharfd judges it under a sigstoreSigned scope through the real registry
// behind a request counter: it reads signatures one at a time, stops at
// the first that verifies, and stops reading bogus ones at its caps (32
// signatures, 4 MiB) with a rejection that says so. Before, every one of
// the 496 payloads was fetched, held and verified on each look-up.
type SignatureBoundsTrustSuite struct {
	suiteFixture
	reg    *testregistry.Registry
	d      *Daemon
	cosign string
	keys   string
	junk   []testregistry.Blob // the bogus bundles, shared by every image
}

func TestSignatureBoundsTrustSuite(t *testing.T) {
	t.Parallel()
	runSuite(t, &SignatureBoundsTrustSuite{})
}

// The flood: 31 manifests (with cosign's own, the 32 a subject may list)
// of 16 layers (the most a signature manifest may have) of 128 KiB.
const (
	floodManifests = 31
	floodLayers    = 16
	floodBundle    = 128 << 10
	// What one walk of a subject's signatures may read: wharf's caps
	// (registry/signatures.go), 32 signatures or 4 MiB, here both 32.
	maxSignatureReads = 32
	bundleMediaType   = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// How much one look-up may raise wharfd's peak RSS: measured 0.2-8
	// MiB with the caps (4 MiB of payloads at most, read one at a time),
	// 84-91 MiB without them (all 62 MiB of bogus bundles held, and the
	// content cache's copies); 48 MiB leaves room for the GC's slack on
	// either side.
	maxLookUpHWMGrowthKiB = 48 << 10
)

func (s *SignatureBoundsTrustSuite) SetUpSuite(c *check.C) {
	s.cosign = cosignBinary(c)
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.keys = c.MkDir()
	runCosign(c, s.cosign, s.keys, "generate-key-pair", "--output-key-prefix", filepath.Join(s.keys, "signer"))
	policy := filepath.Join(c.MkDir(), "policy.json")
	p := fmt.Sprintf(`{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker":{
	  %q:[{"type":"sigstoreSigned","keyPath":%q}]}}}`, s.reg.Host+"/bounds", filepath.Join(s.keys, "signer.pub"))
	c.Assert(os.WriteFile(policy, []byte(p), 0o600), check.IsNil)
	s.d = s.startDaemon(c, "--signature-policy", policy)
	for i := 0; i < floodManifests*floodLayers; i++ {
		b := make([]byte, floodBundle)
		_, err := rand.Read(b)
		c.Assert(err, check.IsNil)
		s.junk = append(s.junk, testregistry.NewBlob(bundleMediaType, b))
	}
}

// flood pushes repo:1 signed by cosign, and lists the bogus manifests in
// its tag-schema index before cosign's bundle (validFirst false) or after
// it. It returns the image and the digests of the bogus payloads.
func (s *SignatureBoundsTrustSuite) flood(c *check.C, repo string, validFirst bool) (*testregistry.Image, map[string]bool) {
	img := pushImage(c, s.reg, repo, "1", testregistry.ImageOptions{})
	args := append(append([]string{}, cosignSignArgs...), "--key", filepath.Join(s.keys, "signer.key"),
		"--new-bundle-format=true", s.reg.Host+"/"+repo+"@"+img.Manifest.Digest)
	runCosign(c, s.cosign, s.keys, args...)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl := s.reg.Client()
	empty := testregistry.NewBlob("application/vnd.oci.empty.v1+json", []byte("{}"))
	c.Assert(cl.PutBlob(ctx, repo, empty), check.IsNil)
	subject := img.Manifest.Descriptor()
	subject.MediaType = testregistry.MediaTypeOCIManifest
	var bogus []ocispec.Descriptor
	digests := map[string]bool{}
	for m := 0; m < floodManifests; m++ {
		var layers []ocispec.Descriptor
		for _, b := range s.junk[m*floodLayers : (m+1)*floodLayers] {
			c.Assert(cl.PutBlob(ctx, repo, b), check.IsNil)
			layers = append(layers, b.Descriptor())
			digests[b.Digest] = true
		}
		body, err := json.Marshal(ocispec.Manifest{Versioned: specsV2, MediaType: testregistry.MediaTypeOCIManifest,
			ArtifactType: bundleMediaType, Config: empty.Descriptor(), Layers: layers, Subject: &subject})
		c.Assert(err, check.IsNil)
		man := testregistry.NewBlob(testregistry.MediaTypeOCIManifest, body)
		c.Assert(cl.PutManifest(ctx, repo, man.Digest, man), check.IsNil)
		d := man.Descriptor()
		d.ArtifactType = bundleMediaType
		bogus = append(bogus, d)
	}

	// cosign's index lists its one bundle; the flood goes beside it.
	tag := testregistry.TagSchemaTag(digest.Digest(img.Manifest.Digest))
	body, mediaType, _, err := cl.GetManifest(ctx, repo, tag)
	c.Assert(err, check.IsNil, check.Commentf("cosign wrote no tag-schema index"))
	var idx ocispec.Index
	c.Assert(json.Unmarshal(body, &idx), check.IsNil)
	c.Assert(idx.Manifests, check.HasLen, 1, check.Commentf("%s", body))
	if validFirst {
		idx.Manifests = append(idx.Manifests, bogus...)
	} else {
		idx.Manifests = append(bogus, idx.Manifests...)
	}
	nb, err := json.Marshal(idx)
	c.Assert(err, check.IsNil)
	c.Assert(cl.PutManifest(ctx, repo, tag, testregistry.NewBlob(mediaType, nb)), check.IsNil)
	return img, digests
}

// signatureGETs counts the GETs of bogus payloads since the last Reset,
// and all blob GETs.
func (s *SignatureBoundsTrustSuite) signatureGETs(bogus map[string]bool) (junk, blobs int) {
	for _, r := range s.reg.Counter.Requests() {
		method, path, _ := strings.Cut(r, " ")
		i := strings.Index(path, "/blobs/")
		if method != "GET" || i < 0 {
			continue
		}
		blobs++
		if bogus[path[i+len("/blobs/"):]] {
			junk++
		}
	}
	return junk, blobs
}

// inspectFlooded floods repo (cosign's signature listed first or last),
// then inspects its image remotely once: the answer, the bogus payload
// and all blob GETs that inspect cost, and wharfd's VmHWM (KiB) before
// and after it.
func (s *SignatureBoundsTrustSuite) inspectFlooded(c *check.C, repo string, validFirst bool) (name string, a trustAnswer, junk, blobs int, before, hwm int64) {
	_, bogus := s.flood(c, repo, validFirst)
	name = s.reg.Host + "/" + repo + ":1"
	s.reg.Counter.Reset()
	before = procStatus(c, s.d.pid(), "VmHWM")
	s.d.Get(c, "/v1.50/images/"+name+"/json?remote=1").JSON(c, &a)
	junk, blobs = s.signatureGETs(bogus)
	hwm = procStatus(c, s.d.pid(), "VmHWM")
	c.Logf("valid first %v: %d bogus payload GETs, %d blob GETs; VmHWM %d KiB -> %d KiB", validFirst, junk, blobs, before, hwm)
	return name, a, junk, blobs, before, hwm
}

// Listed first, cosign's signature is the only one read: one verification,
// not a bogus payload fetched, and the pull goes through.
func (s *SignatureBoundsTrustSuite) TestFirstVerifiedSignatureEndsTheLookUp(c *check.C) {
	name, a, junk, blobs, before, hwm := s.inspectFlooded(c, "bounds/first", true)
	cm := check.Commentf("%+v\n%s", a.Trust, s.reg.Counter.Summary())
	c.Check(a.Trust.Decision, check.Equals, "accepted", cm)
	c.Check(a.Trust.Signatures, check.HasLen, 1, cm)
	c.Check(junk, check.Equals, 0, cm)
	// the image's config and cosign's bundle
	c.Check(blobs <= 2, check.Equals, true, cm)
	c.Check(hwm-before < maxLookUpHWMGrowthKiB, check.Equals, true, check.Commentf("VmHWM %d KiB -> %d KiB", before, hwm))
	s.d.WharfOK(c, "pull", name)
}

// Listed after 496 bogus bundles, cosign's signature is never reached:
// the look-up reads 32 of them, verifies none, and stops; the verdict is
// a rejection that says why, and the pull is refused. Before, all 496
// were fetched and verified, and the image was accepted.
func (s *SignatureBoundsTrustSuite) TestBogusSignaturesStopAtTheCap(c *check.C) {
	name, a, junk, blobs, before, hwm := s.inspectFlooded(c, "bounds/last", false)
	cm := check.Commentf("%+v\n%s", a.Trust, s.reg.Counter.Summary())
	c.Check(a.Trust.Decision, check.Equals, "rejected", cm)
	c.Check(a.Trust.Reason, check.Matches, `(?s).*no signature verified \(32 found: .*the look-up stopped there: .*more than .*`, cm)
	c.Check(junk > 0 && junk <= maxSignatureReads, check.Equals, true, cm)
	c.Check(blobs <= maxSignatureReads+1, check.Equals, true, cm) // and the image's config
	c.Check(hwm-before < maxLookUpHWMGrowthKiB, check.Equals, true, check.Commentf("VmHWM %d KiB -> %d KiB", before, hwm))

	r := s.d.Wharf(c, "pull", name)
	c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Check(r.Stderr, check.Matches, `(?s).*refused by the signature policy: .*the look-up stopped there.*`)
}
