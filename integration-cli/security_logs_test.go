package integration

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// jwtPattern matches any JSON Web Token: a bearer token issued by the token
// server is one, and none may be logged or returned.
var jwtPattern = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+`)

// refreshPattern matches the test token server's refresh (identity) tokens.
var refreshPattern = regexp.MustCompile(`refresh-[0-9]{6,}`)

// TestNoSecretInAnyLogOrAnswer runs login, push, pull, remote inspect and
// distribution inspect against the basic and token registries through the
// API, the wharf CLI (-D) and the docker CLI, with right and wrong
// passwords and an identity token, then searches wharfd's debug log, every
// CLI output and every API answer for the passwords, the X-Registry-Auth
// values, the basic Authorization value, the identity token and any JWT.
func (s *SecuritySuite) TestNoSecretInAnyLogOrAnswer(c *check.C) {
	d := StartDaemon(c, "--log-level", "debug")
	defer d.Kill()
	var outputs []string // every answer and CLI output, checked at the end
	keep := func(what, s string) { outputs = append(outputs, what+":\n"+s) }
	secrets := map[string]string{}
	for _, reg := range []*testregistry.Registry{s.regs.basic, s.regs.token} {
		mode := fmt.Sprint(reg.Auth)
		wrong := reg.Password + "-WRONG"
		secrets[mode+" password"] = reg.Password
		secrets[mode+" wrong password"] = wrong
		secrets[mode+" X-Registry-Auth"] = auth(reg)
		secrets[mode+" X-Registry-Auth (wrong)"] = RegistryAuth(reg.Username, wrong, reg.Host)
		secrets[mode+" basic Authorization"] = base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))
		secrets[mode+" basic Authorization (wrong)"] = base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + wrong))

		name := reg.Host + "/secrets/app"
		d.Import(c, name+":1")
		reg.ResetCounters()

		// API: login (plain JSON body), push, pull, remote and distribution
		// inspect, and the same with a wrong password.
		body := fmt.Sprintf(`{"username":%q,"password":%q,"serveraddress":%q}`, reg.Username, reg.Password, reg.Host)
		r := d.Req(c, http.MethodPost, "/v1.50/auth", strings.NewReader(body), "Content-Type", "application/json")
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s login: %s", mode, r))
		keep("auth", string(r.Body))
		var login struct{ IdentityToken string }
		r.JSON(c, &login)
		if login.IdentityToken != "" {
			secrets[mode+" identity token"] = login.IdentityToken
			idAuth := base64.URLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"identitytoken":%q,"serveraddress":%q}`, login.IdentityToken, reg.Host)))
			secrets[mode+" X-Registry-Auth (identity token)"] = idAuth
			r, lines := d.Pull(c, name, "1", idAuth)
			keep("pull with identity token", string(r.Body))
			c.Check(lines.Err(), check.Equals, "", check.Commentf("%s: pull with identity token: %s", mode, r))
		}
		r = d.Req(c, http.MethodPost, "/v1.50/auth", strings.NewReader(strings.Replace(body, reg.Password, wrong, 1)), "Content-Type", "application/json")
		c.Check(r.Status, check.Equals, http.StatusUnauthorized, check.Commentf("%s", r))
		keep("auth wrong", string(r.Body))
		r, lines := d.Push(c, name, "1", auth(reg))
		c.Check(lines.Err(), check.Equals, "", check.Commentf("%s push: %s", mode, r))
		keep("push", string(r.Body))
		r, _ = d.Push(c, name, "1", RegistryAuth(reg.Username, wrong, reg.Host))
		keep("push wrong", string(r.Body))
		r, lines = d.Pull(c, name, "1", auth(reg))
		c.Check(lines.Err(), check.Equals, "", check.Commentf("%s pull: %s", mode, r))
		keep("pull", string(r.Body))
		r, _ = d.Pull(c, name, "1", RegistryAuth(reg.Username, wrong, reg.Host))
		keep("pull wrong", string(r.Body))
		for _, hdr := range []string{auth(reg), RegistryAuth(reg.Username, wrong, reg.Host)} {
			r = d.Get(c, "/v1.50/images/"+name+":1/json?remote=1", "X-Registry-Auth", hdr)
			keep("remote inspect", string(r.Body))
			r = d.Get(c, "/v1.50/distribution/"+name+":1/json", "X-Registry-Auth", hdr)
			keep("distribution", string(r.Body))
		}
		c.Check(reg.Counter.Total() > 0, check.Equals, true, check.Commentf("%s: nothing reached the registry", mode))

		// wharf CLI with -D: login (stored in config.json), pull, inspect
		// --remote, push; a wrong password.
		for _, res := range []Result{
			d.WharfIn(c, []byte(wrong+"\n"), "-D", "login", reg.Host, "-u", reg.Username, "--password-stdin"),
			d.WharfIn(c, []byte(reg.Password+"\n"), "-D", "login", reg.Host, "-u", reg.Username, "--password-stdin"),
			d.Wharf(c, "-D", "pull", name+":1"),
			d.Wharf(c, "-D", "inspect", "--remote", name+":1"),
			d.Wharf(c, "-D", "push", name+":1"),
		} {
			keep(res.Cmd, res.Stdout+res.Stderr)
		}
		cfg := filepath.Join(d.Home, ".docker", "config.json")
		fi, err := os.Stat(cfg)
		c.Assert(err, check.IsNil)
		c.Check(fi.Mode().Perm(), check.Equals, os.FileMode(0o600), check.Commentf("wharf login left %s with mode %v", cfg, fi.Mode()))
		di, err := os.Stat(filepath.Dir(cfg))
		c.Assert(err, check.IsNil)
		c.Check(di.Mode().Perm()&0o077, check.Equals, os.FileMode(0), check.Commentf("%s is %v", filepath.Dir(cfg), di.Mode()))

		// The docker CLI against wharfd: login, pull, push.
		if _, err := lookDocker(); err == nil {
			for _, res := range []Result{
				d.DockerIn(c, []byte(wrong+"\n"), "login", reg.Host, "-u", reg.Username, "--password-stdin"),
				d.DockerIn(c, []byte(reg.Password+"\n"), "login", reg.Host, "-u", reg.Username, "--password-stdin"),
				d.Docker(c, "pull", name+":1"),
				d.Docker(c, "push", name+":1"),
			} {
				keep(res.Cmd, res.Stdout+res.Stderr)
			}
		}
	}
	d.Stop(c)
	log := d.Log()
	c.Assert(strings.Contains(log, "level=debug"), check.Equals, true, check.Commentf("no debug lines: the check proves nothing"))
	for what, secret := range secrets {
		c.Check(strings.Contains(log, secret), check.Equals, false, check.Commentf("wharfd's log holds the %s", what))
		for _, out := range outputs {
			// The identity token legitimately comes back from POST /auth.
			if strings.HasPrefix(out, "auth:") && strings.Contains(what, "identity token") {
				continue
			}
			if strings.Contains(out, secret) {
				c.Errorf("the %s was returned to a client: %.300s", what, out)
			}
		}
	}
	for _, p := range []*regexp.Regexp{jwtPattern, refreshPattern} {
		c.Check(p.FindString(log), check.Equals, "", check.Commentf("wharfd's log holds a token (%s)", p))
		for _, out := range outputs {
			// The identity token legitimately comes back from POST /auth.
			if strings.HasPrefix(out, "auth:") {
				continue
			}
			if m := p.FindString(out); m != "" {
				c.Errorf("a token was returned to a client (%s): %.300s", m, out)
			}
		}
	}
}

// lookDocker finds the docker CLI without skipping the test.
func lookDocker() (string, error) { return execLookPath("docker") }
