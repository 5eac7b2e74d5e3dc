package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// archivePolicy is a policy that rejects by default and accepts this
// suite's registry; archiveTransport, when not "", is given its own ""
// scope accepting anything.
func (s *TrustSuite) archivePolicy(c *check.C, file, archiveTransport string) {
	extra := ""
	if archiveTransport != "" {
		extra = fmt.Sprintf(`, %q: {"": [{"type": "insecureAcceptAnything"}]}`, archiveTransport)
	}
	p := fmt.Sprintf(`{"default": [{"type": "reject"}],
	 "transports": {"docker": {%q: [{"type": "insecureAcceptAnything"}]}%s}}`, s.host, extra)
	c.Assert(os.WriteFile(file, []byte(p), 0o600), check.IsNil)
}

// startArchivePolicyDaemon starts a wharfd under archivePolicy (no
// archive transport) and returns it and its policy file.
func (s *TrustSuite) startArchivePolicyDaemon(c *check.C) (*Daemon, string) {
	file := filepath.Join(c.MkDir(), "policy.json")
	s.archivePolicy(c, file, "")
	return s.startDaemon(c, "--signature-policy", file), file
}

func assertIngestEmpty(c *check.C, d *Daemon) {
	left, err := os.ReadDir(filepath.Join(d.Root, "ingest"))
	c.Assert(err, check.IsNil)
	c.Assert(left, check.HasLen, 0, check.Commentf("ingest/ holds %v", left))
}

// docker load is judged under the policy's docker-archive transport, as
// containers/image judges every transport: with a default of reject and
// no docker-archive scope an unsigned image is refused (naming the
// transport's fallback scope and the requirement) and nothing is stored;
// with docker-archive's "" accepting, the same archive loads. Before,
// a load never consulted the policy.
func (s *TrustSuite) TestDockerLoadJudgedByArchiveTransport(c *check.C) {
	pushImage(c, s.reg, "trust/archive", "1", testregistry.ImageOptions{})
	name := s.host + "/trust/archive:1"
	d, policy := s.startArchivePolicyDaemon(c)
	d.WharfOK(c, "pull", name) // the docker transport accepts the registry
	file := filepath.Join(c.MkDir(), "image.tar")
	d.DockerOK(c, "save", "-o", file, name)
	d.WharfOK(c, "rmi", name)

	r := d.Docker(c, "load", "-i", file)
	c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Check(r.Stderr, check.Matches, `(?s).*load refused by the signature policy: an image arriving by docker-archive is rejected by policy scope "default": reject: .*`)
	c.Check(strings.TrimSpace(d.WharfOK(c, "images", "-q").Stdout), check.Equals, "")
	assertIngestEmpty(c, d)

	s.archivePolicy(c, policy, "docker-archive")
	hup(c, d, "signature-policy:")
	r = d.DockerOK(c, "load", "-i", file)
	c.Check(r.Stdout, check.Matches, `(?s).*Loaded image: `+name+`.*`)
	c.Check(d.WharfOK(c, "images", "--format", "{{.Repository}}:{{.Tag}}").Stdout, check.Matches, `(?s).*`+name+`.*`)
}

// sync's archive import is judged under oci-archive: refused (403, before
// a byte of the archive is read, nothing pushed) under a default of
// reject, imported once oci-archive's "" accepts.
func (s *TrustSuite) TestSyncImportJudgedByArchiveTransport(c *check.C) {
	img := pushImage(c, s.reg, "trust/airgap", "1", testregistry.ImageOptions{})
	d, policy := s.startArchivePolicyDaemon(c)
	file := filepath.Join(c.MkDir(), "layout.tar")
	d.WharfOK(c, "sync", s.host+"/trust/airgap", "oci-archive:"+file)

	r := d.Wharf(c, "sync", "oci-archive:"+file, s.host+"/imported")
	c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Check(r.Stderr, check.Matches, `(?s).*sync import refused by the signature policy: an image arriving by oci-archive is rejected by policy scope "default": reject: .*`)
	c.Check(dstDigest(c, s.reg, "imported/airgap", "1"), check.Equals, "")
	assertIngestEmpty(c, d)

	s.archivePolicy(c, policy, "oci-archive")
	hup(c, d, "signature-policy:")
	d.WharfOK(c, "sync", "oci-archive:"+file, s.host+"/imported")
	c.Check(dstDigest(c, s.reg, "imported/airgap", "1"), check.Equals, img.Manifest.Digest)
}
