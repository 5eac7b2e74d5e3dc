package integration

import (
	"strings"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// TestWharfLoginPushPullLogout drives wharf's own registry commands against
// the real basic-auth registry: login (wrong and right password), push -q,
// push -a, pull -q, pull -a, logout — credentials coming from the docker
// config that login wrote.
func (s *RegistrySuite) TestWharfLoginPushPullLogout(c *check.C) {
	reg := s.regs.basic
	bad := s.d.WharfIn(c, []byte("wrong-password\n"), "login", reg.Host, "-u", reg.Username, "--password-stdin")
	c.Assert(bad.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", bad))
	c.Assert(bad.Stderr, check.Matches, `(?is).*(unauthori|denied|incorrect).*`)

	login := s.d.WharfIn(c, []byte(reg.Password+"\n"), "login", reg.Host, "-u", reg.Username, "--password-stdin")
	c.Assert(login.ExitCode, check.Equals, 0, check.Commentf("%s", login))
	c.Assert(login.Stdout, check.Matches, `(?s).*Login Succeeded.*`)

	repo := reg.Host + "/wcli/app"
	id1 := s.d.Import(c, repo+":1")
	id2 := s.d.Import(c, repo+":2")
	push := s.d.WharfOK(c, "push", "-q", repo+":1")
	c.Assert(strings.TrimSpace(push.Stdout), check.Equals, repo+":1")
	pushAll := s.d.WharfOK(c, "push", "-a", repo)
	c.Assert(pushAll.Stdout, check.Matches, `(?s).*1: digest: sha256:[0-9a-f]{64} size: [0-9]+.*`)
	c.Assert(pushAll.Stdout, check.Matches, `(?s).*2: digest: sha256:[0-9a-f]{64} size: [0-9]+.*`)

	s.d.WharfOK(c, "rmi", "-f", repo+":1", repo+":2")
	pull := s.d.WharfOK(c, "pull", "-q", repo+":1")
	c.Assert(strings.TrimSpace(pull.Stdout), check.Equals, repo+":1")
	s.d.WharfOK(c, "rmi", "-f", repo+":1")
	s.d.WharfOK(c, "pull", "-a", repo)
	for tag, id := range map[string]string{"1": id1, "2": id2} {
		got := s.d.WharfOK(c, "inspect", "--format", "{{.Id}}", repo+":"+tag)
		c.Assert(strings.TrimSpace(got.Stdout), check.Equals, id, check.Commentf("tag %s", tag))
	}

	s.d.WharfOK(c, "logout", reg.Host)
	s.d.WharfOK(c, "rmi", "-f", repo+":1")
	denied := s.d.Wharf(c, "pull", repo+":1")
	c.Assert(denied.ExitCode, check.Not(check.Equals), 0, check.Commentf("pull after logout succeeded: %s", denied))
}

// TestWharfPullPlatform picks one platform of a multi-platform index.
func (s *RegistrySuite) TestWharfPullPlatform(c *check.C) {
	ix := pushIndex(c, s.regs.anon, "wcli/multi", "1.0", testregistry.IndexOptions{})
	name := s.regs.anon.Host + "/wcli/multi:1.0"
	s.d.WharfOK(c, "pull", "--platform", "linux/arm64", name)
	got := s.d.WharfOK(c, "inspect", "--format", "{{.Id}} {{.Architecture}}", name)
	c.Assert(strings.TrimSpace(got.Stdout), check.Equals, ix.Images[1].ID()+" arm64")
}
