package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// MoveTrustSuite: what a signature binds when an image is copied, with its
// signature, to another repository (crane's copy, as a mirror or a promotion
// does). A legacy cosign .sig names the repository it was signed in
// (docker-reference, without tag or digest): in the new repository
// matchRepository refuses it and exactRepository naming the old one
// accepts it; matchRepoDigestOrExact (the default) and remapIdentity refuse
// a tagless reference wherever the image is, as in containers/image. A
// cosign 3 bundle names no reference, only the digest, so it is accepted
// wherever the image is (docs/security.md).
type MoveTrustSuite struct {
	suiteFixture
	reg    *testregistry.Registry
	d      *Daemon
	cosign string
	keys   string
}

func TestMoveTrustSuite(t *testing.T) { t.Parallel(); runSuite(t, &MoveTrustSuite{}) }

func (s *MoveTrustSuite) SetUpSuite(c *check.C) {
	s.cosign = cosignBinary(c)
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.keys = c.MkDir()
	runCosign(c, s.cosign, s.keys, "generate-key-pair", "--output-key-prefix", filepath.Join(s.keys, "signer"))
	key := filepath.Join(s.keys, "signer.pub")
	h := s.reg.Host
	policy := filepath.Join(c.MkDir(), "policy.json")
	p := fmt.Sprintf(`{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker":{
	  %q:[{"type":"sigstoreSigned","keyPath":%q,"signedIdentity":{"type":"matchRepository"}}],
	  %q:[{"type":"sigstoreSigned","keyPath":%q}],
	  %q:[{"type":"sigstoreSigned","keyPath":%q,"signedIdentity":{"type":"matchRepository"}}],
	  %q:[{"type":"sigstoreSigned","keyPath":%q,"signedIdentity":{"type":"exactRepository","dockerRepository":%q}}],
	  %q:[{"type":"sigstoreSigned","keyPath":%q,"signedIdentity":{"type":"remapIdentity","prefix":%q,"signedPrefix":%q}}]}}}`,
		h+"/signed", key,
		h+"/moved", key,
		h+"/movedrepo", key,
		h+"/pinned", key, h+"/signed/app",
		h+"/remapped", key, h+"/remapped", h+"/signed")
	c.Assert(os.WriteFile(policy, []byte(p), 0o600), check.IsNil)
	s.d = s.startDaemon(c, "--signature-policy", policy)
}

// copy moves src (an image, or a signature tag) to dst the way a mirror
// or a promotion does: go-containerregistry's crane.Copy, the library the
// crane CLI runs, in process (no binary for make test to build), with no
// credentials of the machine's user.
func (s *MoveTrustSuite) copy(c *check.C, src, dst string) {
	err := crane.Copy(s.reg.Host+"/"+src, s.reg.Host+"/"+dst, crane.Insecure, crane.WithAuthFromKeychain(authn.NewMultiKeychain()))
	c.Assert(err, check.IsNil, check.Commentf("crane copy %s %s", src, dst))
}

func (s *MoveTrustSuite) verdict(c *check.C, name string) trustAnswer {
	var a trustAnswer
	s.d.Get(c, "/v1.50/images/"+s.reg.Host+"/"+name+"/json?remote=1").JSON(c, &a)
	return a
}

// sign pushes repo:1 and signs it, a legacy .sig or a bundle; returns the
// image and the tag its signature is under.
func (s *MoveTrustSuite) sign(c *check.C, repo string, bundle bool) (*testregistry.Image, string) {
	img := pushImage(c, s.reg, repo, "1", testregistry.ImageOptions{})
	args := append(append([]string{}, cosignSignArgs...), "--key", filepath.Join(s.keys, "signer.key"),
		fmt.Sprintf("--new-bundle-format=%v", bundle), s.reg.Host+"/"+repo+"@"+img.Manifest.Digest)
	runCosign(c, s.cosign, s.keys, args...)
	tag := strings.Replace(img.Manifest.Digest, ":", "-", 1)
	if !bundle {
		tag += ".sig"
	}
	return img, tag
}

func (s *MoveTrustSuite) TestLegacySignatureNamesItsRepository(c *check.C) {
	img, sigTag := s.sign(c, "signed/app", false)
	for _, dst := range []string{"moved/app", "movedrepo/app", "remapped/app", "pinned/app"} {
		s.copy(c, "signed/app:1", dst+":1")
		s.copy(c, "signed/app:"+sigTag, dst+":"+sigTag)
	}
	at := "@" + img.Manifest.Digest
	h := s.reg.Host
	for _, tc := range []struct {
		name, decision, err string
	}{
		// The control: where it was signed, the key and the repository
		// (matchRepository) match.
		{"signed/app:1", "accepted", ""},
		// The repository check: same image, same signature, same key, but
		// the signature names signed/app and matchRepository wants
		// movedrepo/app.
		{"movedrepo/app:1", "rejected", `signature names "` + h + `/signed/app", which signedIdentity matchRepository does not accept`},
		// exactRepository pins the repository the signature names: the
		// moved image is accepted.
		{"pinned/app:1", "accepted", ""},
		// The default (matchRepoDigestOrExact) refuses it, by tag and by
		// digest: cosign names a repository without tag or digest, which
		// containers' matchRepoDigestOrExact never accepts (see
		// trust/policy's doc) — moved or not.
		{"moved/app:1", "rejected", `signature names "` + h + `/signed/app", which signedIdentity matchRepoDigestOrExact does not accept`},
		{"moved/app" + at, "rejected", `signature names "` + h + `/signed/app", which signedIdentity matchRepoDigestOrExact does not accept`},
		// remapIdentity maps remapped/app to signed/app and then judges as
		// matchRepoDigestOrExact does (containers'
		// prmRemapIdentity.matchesDockerReference), so it too refuses
		// cosign's tagless reference.
		{"remapped/app" + at, "rejected", `signature names "` + h + `/signed/app", which signedIdentity remapIdentity ` + h + `/remapped => ` + h + `/signed does not accept`},
	} {
		a := s.verdict(c, tc.name)
		cm := check.Commentf("%s: %+v", tc.name, a.Trust)
		c.Check(a.Trust.Decision, check.Equals, tc.decision, cm)
		c.Assert(a.Trust.Signatures, check.HasLen, 1, cm)
		c.Check(a.Trust.Signatures[0].Format, check.Equals, "cosign-simplesigning", cm)
		c.Check(a.Trust.Signatures[0].Verified, check.Equals, tc.decision == "accepted", cm)
		c.Check(strings.HasPrefix(a.Trust.Signatures[0].Error, tc.err), check.Equals, true, cm)
		c.Check(a.Trust.Signatures[0].Error == "", check.Equals, tc.err == "", cm)
	}
	r := s.d.Wharf(c, "pull", h+"/movedrepo/app:1")
	c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Check(r.Stderr, check.Matches, `(?s).*refused by the signature policy: .*`)
	s.d.WharfOK(c, "pull", h+"/pinned/app:1")
}

// A bundle binds the digest only: copied with its tag-schema index to
// another repository, it is accepted there under the default identity, by
// tag and by digest. The control: the same copy without its signature is
// refused, so the acceptance is the moved bundle's.
func (s *MoveTrustSuite) TestBundleMovesWithTheDigest(c *check.C) {
	img, sigTag := s.sign(c, "signed/bapp", true)
	s.copy(c, "signed/bapp:1", "moved/bapp:1")
	s.copy(c, "signed/bapp:"+sigTag, "moved/bapp:"+sigTag)
	s.copy(c, "signed/bapp:1", "moved/unsigned:1")
	for _, tc := range []struct{ name, decision string }{
		{"moved/bapp:1", "accepted"},
		{"moved/bapp@" + img.Manifest.Digest, "accepted"},
		{"moved/unsigned:1", "rejected"},
	} {
		a := s.verdict(c, tc.name)
		cm := check.Commentf("%s: %+v", tc.name, a.Trust)
		c.Check(a.Trust.Decision, check.Equals, tc.decision, cm)
		if tc.decision == "accepted" {
			c.Assert(a.Trust.Signatures, check.HasLen, 1, cm)
			c.Check(a.Trust.Signatures[0].Format, check.Equals, "sigstore-bundle", cm)
			c.Check(a.Trust.Signatures[0].Verified, check.Equals, true, cm)
		} else {
			c.Check(a.Trust.Reason, check.Matches, `.*no signature found.*`, cm)
		}
	}
	s.d.WharfOK(c, "pull", s.reg.Host+"/moved/bapp:1")
}
