package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// TrustSuite: the signature policy (issue 21) through the real binaries
// against the real registry. The policy here decides by scope alone —
// reject one repository, accept the rest — so that the refusal path is
// shown through every client; the signature formats have their own tests.
type TrustSuite struct {
	suiteFixture
	reg    *testregistry.Registry
	front  *testregistry.Counter // what wharfd asks: layers must not be
	host   string                // the name's registry: the counter
	d      *Daemon
	policy string
}

func TestTrustSuite(t *testing.T) { t.Parallel(); runSuite(t, &TrustSuite{}) }

func (s *TrustSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
	var err error
	s.front, err = testregistry.NewCounter(s.reg.DirectURL)
	c.Assert(err, check.IsNil)
	s.closeAtEnd(s.front.Close)
	s.host = s.front.Host
	s.policy = filepath.Join(c.MkDir(), "policy.json")
	s.writePolicy(c, "trust/refused")
	s.d = s.startDaemon(c, "--signature-policy", s.policy)
}

// writePolicy rejects the repository rejected (on this registry, named
// by its address and as localhost) and accepts everything else.
func (s *TrustSuite) writePolicy(c *check.C, rejected string) {
	p := fmt.Sprintf(`{"default":[{"type":"insecureAcceptAnything"}],
	 "transports":{"docker":{%q:[{"type":"reject"}],%q:[{"type":"reject"}]}}}`,
		s.host+"/"+rejected, s.localhost()+"/"+rejected)
	c.Assert(os.WriteFile(s.policy, []byte(p), 0o600), check.IsNil)
}

// localhost is the registry's host:port with the name localhost.
func (s *TrustSuite) localhost() string {
	_, port, _ := net.SplitHostPort(s.host) // the counter's 127.0.0.1:PORT
	return "localhost:" + port
}

// A host name is case-insensitive: LOCALHOST:PORT is the registry that
// localhost:PORT names, so the scope written for localhost:PORT/… rejects
// it too. Before, the scope was looked up by the host as typed and the
// pull went through under the permissive default.
func (s *TrustSuite) TestScopeHostIgnoresCase(c *check.C) {
	pushImage(c, s.reg, "trust/refused", "case", testregistry.ImageOptions{})
	for _, host := range []string{s.localhost(), strings.ToUpper(s.localhost()), "LocalHost:" + strings.TrimPrefix(s.localhost(), "localhost:")} {
		name := host + "/trust/refused:case"
		r := s.d.Wharf(c, "pull", name)
		c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
		c.Check(r.Stderr, check.Matches, `(?s).*refused by the signature policy: .*rejected by policy scope "`+s.localhost()+`/trust/refused".*`, check.Commentf("%s", name))
		var got struct {
			Trust struct{ Decision, Scope string }
		}
		s.d.Get(c, "/v1.50/images/"+name+"/json?remote=1").JSON(c, &got)
		c.Check(got.Trust.Decision, check.Equals, "rejected", check.Commentf("%s", name))
		c.Check(got.Trust.Scope, check.Equals, s.localhost()+"/trust/refused", check.Commentf("%s", name))
	}
	c.Check(s.d.Wharf(c, "inspect", strings.ToUpper(s.localhost())+"/trust/refused:case").ExitCode, check.Not(check.Equals), 0)
}

// A rejected image still inspects: Trust says what the policy decided,
// under which scope and why. An accepted one says accepted.
func (s *TrustSuite) TestRemoteInspectReportsTheVerdict(c *check.C) {
	img := pushImage(c, s.reg, "trust/refused", "1", testregistry.ImageOptions{})
	pushImage(c, s.reg, "trust/ok", "1", testregistry.ImageOptions{})
	var got struct {
		Id    string
		Trust struct{ Decision, Scope, Requirement, Reason, Digest string }
	}
	s.d.Get(c, "/v1.50/images/"+s.host+"/trust/refused:1/json?remote=1").JSON(c, &got)
	c.Check(got.Id, check.Equals, img.ID())
	c.Check(got.Trust.Decision, check.Equals, "rejected")
	c.Check(got.Trust.Scope, check.Equals, s.host+"/trust/refused")
	c.Check(got.Trust.Requirement, check.Equals, "reject")
	c.Check(got.Trust.Digest, check.Equals, img.Manifest.Digest)
	c.Check(strings.Contains(got.Trust.Reason, "trust/refused"), check.Equals, true, check.Commentf("%s", got.Trust.Reason))

	s.d.Get(c, "/v1.50/images/"+s.host+"/trust/ok:1/json?remote=1").JSON(c, &got)
	c.Check(got.Trust.Decision, check.Equals, "accepted")
	c.Check(got.Trust.Scope, check.Equals, "default")
}

// A pull the policy rejects fails at once, before any layer moves, with
// the same words through wharf, the docker CLI and the Go SDK; nothing is
// stored and the refusal is an event. Before the policy, all three pulled.
func (s *TrustSuite) TestRejectedPullFailsThroughEveryClient(c *check.C) {
	img := pushImage(c, s.reg, "trust/refused", "2", testregistry.ImageOptions{})
	name := s.host + "/trust/refused:2"
	since := time.Now().Unix()

	w := s.d.Wharf(c, "pull", name)
	c.Assert(w.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", w))
	c.Check(w.Stderr, check.Matches, `(?s).*pull of `+name+` refused by the signature policy: .*rejected by policy scope.*`)

	d := s.d.Docker(c, "pull", name)
	c.Assert(d.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", d))
	c.Check(d.Stderr, check.Matches, `(?s).*pull of `+name+` refused by the signature policy: .*`)

	cli, err := client.New(client.WithHost(s.d.Host), client.WithHTTPClient(s.d.HTTPClient()), client.WithVersion("1.50"))
	c.Assert(err, check.IsNil)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pull, err := cli.ImagePull(ctx, name, client.ImagePullOptions{})
	if err == nil {
		err = pull.Wait(ctx)
	}
	c.Assert(err, check.NotNil)
	c.Check(err.Error(), check.Matches, `(?s).*refused by the signature policy: .*`)

	// Nothing stored; no layer was asked for.
	c.Check(s.d.Wharf(c, "inspect", name).ExitCode, check.Not(check.Equals), 0)
	asked := strings.Join(s.front.Requests(), "\n")
	for _, l := range img.Layers {
		c.Check(strings.Contains(asked, "/blobs/"+l.Digest), check.Equals, false, check.Commentf("layer %s was downloaded:\n%s", l.Digest, asked))
	}
	// The refusal is an event.
	ev := s.d.WharfOK(c, "events", "--since", fmt.Sprint(since), "--until", fmt.Sprint(time.Now().Unix()+1), "--format", "{{json .}}")
	c.Check(strings.Contains(ev.Stdout, `"Action":"refused"`), check.Equals, true, check.Commentf("events:\n%s", ev.Stdout))
}

// An accepted pull records its verdict, and local inspect shows it.
func (s *TrustSuite) TestAcceptedPullRecordsItsVerdict(c *check.C) {
	pushImage(c, s.reg, "trust/ok", "2", testregistry.ImageOptions{})
	name := s.host + "/trust/ok:2"
	s.d.WharfOK(c, "pull", name)
	out := s.d.WharfOK(c, "inspect", "-f", "{{json .Trust}}", name)
	var t struct{ Decision, Scope, PolicyRevision string }
	c.Assert(json.Unmarshal([]byte(out.Stdout), &t), check.IsNil, check.Commentf("%s", out.Stdout))
	c.Check(t.Decision, check.Equals, "accepted")
	c.Check(t.Scope, check.Equals, "default")
	c.Check(t.PolicyRevision, check.Matches, "sha256:[0-9a-f]{64}")
}

// wharf trust show prints the scope that applies to a name; a policy that
// does not load on SIGHUP keeps the old one, and a good one replaces it.
func (s *TrustSuite) TestTrustShowAndReload(c *check.C) {
	out := s.d.WharfOK(c, "trust", "show", s.host+"/trust/refused:1")
	c.Check(out.Stdout, check.Matches, `(?s).*scope: `+s.host+`/trust/refused\n  requires: reject\n.*`)

	c.Assert(os.WriteFile(s.policy, []byte(`{"default":[{"type":"noSuchType"}]}`), 0o600), check.IsNil)
	hup(c, s.d, "reload failed")
	out = s.d.WharfOK(c, "trust", "show", s.host+"/trust/refused:1")
	c.Check(out.Stdout, check.Matches, `(?s).*requires: reject\n.*`, check.Commentf("a bad reload must keep the old policy"))

	s.writePolicy(c, "trust/other")
	hup(c, s.d, "signature-policy:")
	out = s.d.WharfOK(c, "trust", "show", s.host+"/trust/refused:1")
	c.Check(out.Stdout, check.Matches, `(?s).*scope: default\n  requires: insecureAcceptAnything\n.*`)
	s.writePolicy(c, "trust/refused")
	hup(c, s.d, "signature-policy:")
}

// A copy whose source the policy rejects is refused before anything moves:
// DST has no manifest and no blob of it.
func (s *TrustSuite) TestRejectedCopyMovesNothing(c *check.C) {
	img := pushImage(c, s.reg, "trust/refused", "3", testregistry.ImageOptions{})
	dst := s.startRegistry(c, testregistry.Options{})
	r := s.d.Wharf(c, "copy", s.host+"/trust/refused:3", dst.Host+"/copied/app:1")
	c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Check(r.Stderr, check.Matches, `(?s).*copy of `+s.host+`/trust/refused:3 refused by the signature policy: .*`)
	ctx, cancel := fixtureCtx()
	defer cancel()
	_, _, _, err := dst.Client().GetManifest(ctx, "copied/app", "1")
	c.Check(err, check.NotNil, check.Commentf("the manifest reached DST"))
	for _, l := range img.Layers {
		resp, err := http.Head(dst.DirectURL + "/v2/copied/app/blobs/" + l.Digest)
		c.Assert(err, check.IsNil)
		resp.Body.Close()
		c.Check(resp.StatusCode, check.Equals, http.StatusNotFound, check.Commentf("layer %s reached DST", l.Digest))
	}
}

// images --check-remote says when the digest a tag now names would be
// rejected: the update an operator is about to take.
func (s *TrustSuite) TestCheckRemoteJudgesTheUpdate(c *check.C) {
	pushImage(c, s.reg, "trust/moving", "1", testregistry.ImageOptions{})
	name := s.host + "/trust/moving:1"
	s.d.WharfOK(c, "pull", name) // accepted: the default scope
	s.writePolicy(c, "trust/moving")
	hup(c, s.d, "signature-policy:")
	defer func() {
		s.writePolicy(c, "trust/refused")
		hup(c, s.d, "signature-policy:")
	}()
	pushImage(c, s.reg, "trust/moving", "1", testregistry.ImageOptions{}) // a new digest
	res := s.d.WharfOK(c, "images", "--check-remote", "--format", "{{.Remote}}", name)
	c.Check(strings.TrimSpace(res.Stdout), check.Equals, "outdated, update rejected by policy", check.Commentf("%s", res))
	var row struct {
		RemoteTrust struct{ Decision, Scope string }
	}
	j := s.d.WharfOK(c, "images", "--check-remote", "--format", "json", name)
	c.Assert(json.Unmarshal([]byte(strings.TrimSpace(j.Stdout)), &row), check.IsNil, check.Commentf("%s", j.Stdout))
	c.Check(row.RemoteTrust.Decision, check.Equals, "rejected")
	c.Check(row.RemoteTrust.Scope, check.Equals, s.host+"/trust/moving")
}

// The policy judges the name the user asked for, never the mirror that
// served it: a mirror for the registry (hosts.toml) answers, ServedBy says
// so, and the scope that decides is still the upstream repository's — a
// scope naming the mirror's host (which accepts) is never consulted.
func (s *TrustSuite) TestPolicyAppliesToTheNameNotTheMirror(c *check.C) {
	up := s.startRegistry(c, testregistry.Options{})
	mirror := s.startRegistry(c, testregistry.Options{ProxyRemoteURL: up.DirectURL})
	pushImage(c, up, "mirrored/app", "1", testregistry.ImageOptions{})
	policy := filepath.Join(c.MkDir(), "policy.json")
	p := fmt.Sprintf(`{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker":{
	  %q:[{"type":"reject"}], %q:[{"type":"insecureAcceptAnything"}]}}}`, up.Host+"/mirrored", mirror.Host)
	c.Assert(os.WriteFile(policy, []byte(p), 0o600), check.IsNil)
	d := NewDaemon(c)
	certs := filepath.Join(d.Home, "certs.d")
	hostPart, port, _ := strings.Cut(up.Host, ":")
	writeHostsToml(c, certs, hostPart+"_"+port+"_", fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n",
		"http://"+up.Host, "http://"+mirror.Host))
	d.Start(c, "--certs-dir", certs, "--signature-policy", policy)
	s.killAtEnd(d)

	var got struct {
		ServedBy string
		Trust    struct{ Decision, Scope string }
	}
	d.Get(c, "/v1.50/images/"+up.Host+"/mirrored/app:1/json?remote=1").JSON(c, &got)
	c.Check(got.ServedBy, check.Equals, mirror.Host)
	c.Check(got.Trust.Decision, check.Equals, "rejected")
	c.Check(got.Trust.Scope, check.Equals, up.Host+"/mirrored")
	r := d.Wharf(c, "pull", up.Host+"/mirrored/app:1")
	c.Check(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
}
