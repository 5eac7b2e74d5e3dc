package integration

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"gopkg.in/check.v1"
)

// SecuritySuite: the defaults that keep people out (TLS on tcp://, file
// modes, credentials out of logs).
type SecuritySuite struct {
	suiteFixture
	regs *registries
}

func TestSecuritySuite(t *testing.T) { t.Parallel(); runSuite(t, &SecuritySuite{}) }

func (s *SecuritySuite) SetUpSuite(c *check.C) {
	s.regs = s.startRegistries(c)
}

func (s *SecuritySuite) TestTCPWithTLSVerifyRefusesClientsWithoutCertificate(c *check.C) {
	pki := newTestPKI(c)
	addr := freeTCPAddr(c)
	d := StartDaemon(c, "-H", "tcp://"+addr, "--tlsverify", "--tlscacert", pki.CA, "--tlscert", pki.ServerCert, "--tlskey", pki.ServerKey)
	defer d.Kill()
	c.Assert(d.Log(), check.Not(check.Matches), "(?s).*INSECURE.*")

	get := func(cfg *tls.Config) (int, error) {
		hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		defer hc.CloseIdleConnections()
		resp, err := hc.Get("https://" + addr + "/_ping")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// A client that trusts the server but has no certificate: refused in
	// the handshake, no HTTP answer at all.
	_, err := get(&tls.Config{RootCAs: pki.Pool})
	c.Assert(err, check.NotNil)
	// A certificate from another CA: refused.
	other := newTestPKI(c)
	otherPair, err := tls.LoadX509KeyPair(other.ClientCert, other.ClientKey)
	c.Assert(err, check.IsNil)
	_, err = get(&tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{otherPair}})
	c.Assert(err, check.NotNil)
	// Plain HTTP on the TLS port: never a 200.
	if status, err := get(nil); err == nil {
		c.Assert(status, check.Not(check.Equals), http.StatusOK)
	}
	pair, err := tls.LoadX509KeyPair(pki.ClientCert, pki.ClientKey)
	c.Assert(err, check.IsNil)
	status, err := get(&tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{pair}})
	c.Assert(err, check.IsNil)
	c.Assert(status, check.Equals, http.StatusOK)

	env := append(d.cliEnv(), "WHARF_HOST=", "DOCKER_HOST=")
	// wharf without TLS flags: fails, clearly.
	r := runCmd(c, nil, env, bins.Wharf, "-H", "tcp://"+addr, "version")
	c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	// wharf with the flags, and with WHARF_CERT_PATH + WHARF_TLS_VERIFY.
	r = runCmd(c, nil, env, bins.Wharf, "-H", "tcp://"+addr, "--tlsverify", "--tlscacert", pki.CA, "--tlscert", pki.ClientCert, "--tlskey", pki.ClientKey, "version")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	r = runCmd(c, nil, append(env, "WHARF_CERT_PATH="+pki.Dir, "WHARF_TLS_VERIFY=1"), bins.Wharf, "-H", "tcp://"+addr, "images")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	// A wrong client key pair: refused.
	r = runCmd(c, nil, env, bins.Wharf, "-H", "tcp://"+addr, "--tlsverify", "--tlscacert", pki.CA, "--tlscert", other.ClientCert, "--tlskey", other.ClientKey, "version")
	c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))

	// The docker CLI with --tlsverify and DOCKER_CERT_PATH, as against dockerd.
	docker := dockerPath(c)
	r = runCmd(c, nil, append(env, "DOCKER_CERT_PATH="+pki.Dir), docker, "--tlsverify", "-H", "tcp://"+addr, "images")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	r = runCmd(c, nil, env, docker, "-H", "tcp://"+addr, "images")
	c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
}

func (s *SecuritySuite) TestTCPWithoutTLSIsRefusedUnlessInsecureFlag(c *check.C) {
	addr := freeTCPAddr(c)
	d := NewDaemon(c)
	err := d.StartWithError("-H", "tcp://"+addr)
	c.Assert(err, check.NotNil)
	c.Assert(d.Log(), check.Matches, "(?s).*refusing to listen on tcp://.*--tlsverify.*--allow-insecure-tcp.*")

	d = NewDaemon(c)
	c.Assert(d.StartWithError("--tlscert", "/x"), check.NotNil)
	c.Assert(d.Log(), check.Matches, "(?s).*need --tlsverify.*")

	d = StartDaemon(c, "-H", "tcp://"+addr, "--allow-insecure-tcp")
	defer d.Kill()
	c.Assert(strings.Count(d.Log(), "!!! INSECURE"), check.Equals, 1, check.Commentf("%s", d.Log()))
	c.Assert(d.Log(), check.Matches, "(?s).*level=warning msg=\"!!! INSECURE.*")
}
