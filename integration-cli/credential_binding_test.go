package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// A short name found at the second add-registry B, asked with an
// X-Registry-Auth without serveraddress (the Docker Go SDK's): the search
// asks B anonymously, and so must the signature verdict that follows it —
// under a signature policy, and with verify=1 without one. The verdict used
// to build a second repository from the raw credentials, which bound them
// to B: B received Basic alice:password on its referrers and .sig requests.
// B is a real registry whose token server would accept the password, so a
// leak is silent to the caller and visible only at B's proxies.
func (s *ResolveSuite) TestVerdictAsksALaterCandidateAnonymously(c *check.C) {
	a, b := s.alice, s.pub
	img := pushImage(c, b, "verdict/app", "1.0", testregistry.ImageOptions{Labels: map[string]string{"from": "B"}})
	policy := signaturePolicy(c)
	hdr := sdkAuth(aliceUser, alicePassword)

	for _, tc := range []struct {
		name   string
		daemon []string
		query  string
	}{
		{"verify=1 without a policy", nil, "verify=1"},
		{"under a signature policy", []string{"--signature-policy", policy}, ""},
	} {
		d := StartDaemon(c, append([]string{"--add-registry", a.Host, "--add-registry", b.Host, "--block-registry", "docker.io"}, tc.daemon...)...)
		defer d.Stop(c)
		a.ResetCounters()
		b.ResetCounters()
		r := rsRemote(c, d, "verdict/app:1.0", hdr, tc.query)
		c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: %s\n%s", tc.name, r, logTail(d)))
		if r.Status == http.StatusOK {
			var m map[string]any
			r.JSON(c, &m)
			c.Check(m["Id"], check.Equals, img.ID(), check.Commentf(tc.name))
			c.Check(m["Registry"], check.Equals, b.Host, check.Commentf(tc.name))
			c.Check(m["Trust"], check.NotNil, check.Commentf("%s: no verdict: %v", tc.name, m))
		}
		// The verdict asked B for the signatures, or the test proves nothing.
		c.Check(b.Counter.Count("GET referrers")+countSig(b) > 0, check.Equals, true,
			check.Commentf("%s: B was not asked for signatures: %v", tc.name, b.RequestLog()))
		noCredentialsAt(c, b, tc.name)
	}
}

// countSig counts the requests for cosign's sha256-<hex>.sig tag.
func countSig(reg *testregistry.Registry) int {
	n := 0
	for _, r := range reg.Counter.Requests() {
		if strings.Contains(r, ".sig") {
			n++
		}
	}
	return n
}

// signaturePolicy writes a policy whose every scope needs a sigstore
// signature by a fresh key: every remote inspect reads the signatures.
func signaturePolicy(c *check.C) string {
	dir := c.MkDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	c.Assert(err, check.IsNil)
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	c.Assert(err, check.IsNil)
	pub := filepath.Join(dir, "signer.pub")
	c.Assert(os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600), check.IsNil)
	p := filepath.Join(dir, "policy.json")
	c.Assert(os.WriteFile(p, []byte(fmt.Sprintf(`{"default":[{"type":"sigstoreSigned","keyPath":%q,"signedIdentity":{"type":"matchRepository"}}]}`, pub)), 0o600), check.IsNil)
	return p
}

// `wharf login A` then `wharf pull NAME` with a short NAME: the CLI sends
// the stored credentials of each registry the daemon searches, keyed by
// registry, and the daemon gives each candidate its own set. Before, the
// CLI bound the login to Docker Hub (a short name parses as docker.io)
// while the daemon searched A first, which was asked anonymously and
// refused. A is the first candidate, then the second behind an anonymous
// registry that does not have NAME and must receive no credentials.
func (s *ResolveSuite) TestShortNameUsesTheLoginOfTheRegistrySearched(c *check.C) {
	tok, anon := s.regs.token, s.regs.anon
	img := pushImage(c, tok, "login/app", "1", testregistry.ImageOptions{Labels: map[string]string{"from": "A"}})

	for _, tc := range []struct {
		name   string
		search []string
	}{
		{"A first", []string{tok.Host}},
		{"A second", []string{anon.Host, tok.Host}},
	} {
		args := []string{"--block-registry", "docker.io"}
		for _, h := range tc.search {
			args = append(args, "--add-registry", h)
		}
		d := StartDaemon(c, args...)
		defer d.Stop(c)
		login := d.WharfIn(c, []byte(tok.Password+"\n"), "login", tok.Host, "-u", tok.Username, "--password-stdin")
		c.Assert(login.ExitCode, check.Equals, 0, check.Commentf("%s", login))
		anon.ResetCounters()

		ins := d.Wharf(c, "inspect", "--remote", "login/app:1")
		c.Check(ins.ExitCode, check.Equals, 0, check.Commentf("%s: inspect --remote: %s\n%s", tc.name, ins, logTail(d)))
		c.Check(ins.Stdout, check.Matches, `(?s).*"Registry": "`+regexpQuote(tok.Host)+`".*`, check.Commentf("%s: %s", tc.name, ins))
		raw := d.Wharf(c, "inspect", "--remote", "--raw", "login/app:1")
		c.Check(raw.ExitCode, check.Equals, 0, check.Commentf("%s: inspect --raw: %s", tc.name, raw))
		pull := d.Wharf(c, "pull", "login/app:1")
		c.Check(pull.ExitCode, check.Equals, 0, check.Commentf("%s: pull: %s\n%s", tc.name, pull, logTail(d)))
		c.Check(d.Inspect(c, tok.Host+"/login/app:1")["Id"], check.Equals, img.ID(), check.Commentf(tc.name))

		// Push: to the registry its name names, with that registry's login.
		d.WharfOK(c, "tag", tok.Host+"/login/app:1", tok.Host+"/login/pushed:1")
		push := d.Wharf(c, "push", tok.Host+"/login/pushed:1")
		c.Check(push.ExitCode, check.Equals, 0, check.Commentf("%s: push: %s", tc.name, push))

		// The registry without NAME was asked, anonymously.
		if len(tc.search) > 1 {
			c.Check(anon.Requests() > 0, check.Equals, true, check.Commentf("%s: the first candidate was not asked", tc.name))
		}
		for i, h := range anon.Counter.HeaderValues("Authorization") {
			c.Check(h, check.Equals, "", check.Commentf("%s: %s carried credentials", tc.name, anon.Counter.Requests()[i]))
		}
	}
}

// A local image's attestations are read from the repositories it was
// pulled from (its repo digests), in turn when one fails. An X-Registry-Auth
// without serveraddress is bound once, to the registry of the name asked
// for: when that origin is down, the next origin is asked anonymously. It
// used to be bound again to each origin tried, so B, where the same image
// was also pulled from, received alice's password (B's token server would
// accept it: the leak is visible only at B's proxies).
func (s *ResolveSuite) TestLocalAttestationsBindTheCredentialsOnce(c *check.C) {
	a := s.startRegistry(c, testregistry.Options{}) // the origin asked for; down when asked
	b := s.pub
	bx := pushBuildxTo(c, a, "origin/app", "1", nil)
	ctx, cancel := fixtureCtx()
	defer cancel()
	for _, img := range []*testregistry.Image{bx.amd, bx.arm, bx.att} {
		c.Assert(b.Client().PushImage(ctx, "origin/app", "", img), check.IsNil)
	}
	c.Assert(b.Client().PutManifest(ctx, "origin/app", "1", bx.index), check.IsNil)

	d := StartDaemon(c, "--block-registry", "docker.io")
	defer d.Stop(c)
	for _, reg := range []*testregistry.Registry{a, b} {
		r, lines := d.Pull(c, reg.Host+"/origin/app", "1", "", "platform", "linux/amd64")
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("pull from %s: %s", reg.Host, r))
		c.Assert(lines.Err(), check.Equals, "", check.Commentf("pull from %s", reg.Host))
	}
	a.Stop()
	b.ResetCounters()
	r := d.Get(c, "/v1.55/images/"+a.Host+"/origin/app:1/attestations", "X-Registry-Auth", sdkAuth(aliceUser, alicePassword))
	c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s\n%s", r, logTail(d)))
	c.Check(b.Requests() > 0, check.Equals, true, check.Commentf("the second origin was not asked: %s", r))
	noCredentialsAt(c, b, "local attestations")
}

// `wharf tags` and `wharf attestations --remote` of a short name send the
// login of the registry the daemon finds it at, as inspect and pull do:
// A's login goes to A, searched second, and the first candidate, B, is
// asked anonymously.
func (s *ResolveSuite) TestShortNameTagsAndAttestationsUseTheLoginOfTheRegistrySearched(c *check.C) {
	tok, anon := s.regs.token, s.regs.anon
	pushImage(c, tok, "login/listed", "1", testregistry.ImageOptions{})
	d := StartDaemon(c, "--block-registry", "docker.io", "--add-registry", anon.Host, "--add-registry", tok.Host)
	defer d.Stop(c)
	login := d.WharfIn(c, []byte(tok.Password+"\n"), "login", tok.Host, "-u", tok.Username, "--password-stdin")
	c.Assert(login.ExitCode, check.Equals, 0, check.Commentf("%s", login))
	anon.ResetCounters()

	tags := d.Wharf(c, "tags", "login/listed")
	c.Check(tags.ExitCode, check.Equals, 0, check.Commentf("tags: %s\n%s", tags, logTail(d)))
	c.Check(strings.Fields(tags.Stdout), check.DeepEquals, []string{"1"}, check.Commentf("tags: %s", tags))
	att := d.Wharf(c, "attestations", "--remote", "login/listed:1")
	c.Check(att.ExitCode, check.Equals, 0, check.Commentf("attestations --remote: %s\n%s", att, logTail(d)))

	c.Check(anon.Requests() > 0, check.Equals, true, check.Commentf("the first candidate was not asked"))
	for i, h := range anon.Counter.HeaderValues("Authorization") {
		c.Check(h, check.Equals, "", check.Commentf("%s carried credentials", anon.Counter.Requests()[i]))
	}
}
