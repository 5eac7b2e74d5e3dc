package integration

import (
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// CheckRemoteWatchAuthSuite is the watch's credentials (issue 24,
// check-remote-auth-file) against two real token-auth registries, A and B,
// each with its own user and no anonymous pull, each token realm on a host
// of its own (the token server's counting proxy):
//
//   - without the file the watch learns nothing of a private repository,
//     and says so once per round (not once per tag);
//   - a SIGHUP that names the file makes the next rounds read A: exactly
//     one outdated event for the tag that moved;
//   - A's credential never reaches B nor B's realm (counted at their
//     proxies); A's realm gets it as the basic-to-token exchange A asked
//     for (the registry layer's rule, kept);
//   - a changed file, SIGHUP, takes effect (B's credential added: B's
//     moved tag is reported); a missing file fails the reload and keeps
//     the running credentials;
//   - no password is ever in the daemon's log.
type CheckRemoteWatchAuthSuite struct {
	suiteFixture
	a, b *testregistry.Registry
}

func TestCheckRemoteWatchAuthSuite(t *testing.T) {
	t.Parallel()
	runSuite(t, &CheckRemoteWatchAuthSuite{})
}

const (
	watchAuthUserA = "alice"
	watchAuthPassA = "a-Pa55-7e1f0c2d9b"
	watchAuthUserB = "bob"
	watchAuthPassB = "b-Pa55-93c4a1d07e"
)

func (s *CheckRemoteWatchAuthSuite) SetUpSuite(c *check.C) {
	s.a = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken, Users: map[string]string{watchAuthUserA: watchAuthPassA}})
	s.b = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken, Users: map[string]string{watchAuthUserB: watchAuthPassB}})
}

// authHeaders records the Authorization headers of wharfd's requests
// (its User-Agent) that reach a proxy; the test's own pushes carry theirs.
type authHeaders struct {
	mu       sync.Mutex
	seen     []string
	requests int // wharfd's requests, with or without Authorization
}

func (h *authHeaders) record(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !strings.HasPrefix(r.Header.Get("User-Agent"), "wharf/") {
		return
	}
	h.requests++
	if a := r.Header.Get("Authorization"); a != "" {
		h.seen = append(h.seen, a)
	}
}

func (h *authHeaders) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests
}

func (h *authHeaders) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen...)
}

// basicOf is the Authorization header of user:pass.
func basicOf(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// writeAuthFile writes a docker config.json with inline sets, host → "user:pass".
func writeAuthFile(c *check.C, path string, sets map[string]string) {
	var parts []string
	for host, up := range sets {
		parts = append(parts, `"`+host+`":{"auth":"`+base64.StdEncoding.EncodeToString([]byte(up))+`"}`)
	}
	c.Assert(os.WriteFile(path, []byte(`{"auths":{`+strings.Join(parts, ",")+`}}`), 0o600), check.IsNil)
}

func (s *CheckRemoteWatchAuthSuite) TestWatchReadsPrivateRepositoriesWithTheAuthFile(c *check.C) {
	a, b := s.a, s.b
	dir := c.MkDir()
	cfg := filepath.Join(dir, "daemon.json")
	authFile := filepath.Join(dir, "config.json")
	writeCfg := func(withAuth bool) {
		body := `{"check-remote-interval":"1s"}`
		if withAuth {
			body = `{"check-remote-interval":"1s","check-remote-auth-file":"` + authFile + `"}`
		}
		c.Assert(os.WriteFile(cfg, []byte(body), 0o600), check.IsNil)
	}
	writeCfg(false)
	d := s.startDaemon(c, "--config-file", cfg, "--metrics-addr", "127.0.0.1:0")
	url := watchMetrics(c, d)

	// Two private tags in A (one will move), one in B; pulled with the
	// client's credentials, as a user would.
	pushImage(c, a, "wp/app", "latest", testregistry.ImageOptions{})
	pushImage(c, a, "wp/still", "latest", testregistry.ImageOptions{})
	pushImage(c, b, "wp/other", "latest", testregistry.ImageOptions{})
	for _, p := range []struct {
		reg  *testregistry.Registry
		repo string
	}{{a, "wp/app"}, {a, "wp/still"}, {b, "wp/other"}} {
		r, lines := d.Pull(c, p.reg.Host+"/"+p.repo, "latest", auth(p.reg))
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: %s", p.repo, r))
		c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s", p.repo))
	}
	// From here on, what reaches B and the realms is counted.
	var atB, atBRealm, atARealm authHeaders
	b.Counter.SetBefore(atB.record)
	b.TokenCounter.SetBefore(atBRealm.record)
	a.TokenCounter.SetBefore(atARealm.record)
	defer b.Counter.SetBefore(nil)
	defer b.TokenCounter.SetBefore(nil)
	defer a.TokenCounter.SetBefore(nil)

	// 1. No file: A's tag moves, the watch cannot tell; one line a round.
	t0 := time.Now()
	app2 := pushImage(c, a, "wp/app", "latest", testregistry.ImageOptions{})
	pushImage(c, b, "wp/other", "latest", testregistry.ImageOptions{})
	before := scrapeURL(c, url).value(c, "wharf_check_remote_rounds_total", nil)
	after := waitRounds(c, url, 3)
	c.Assert(imageEvents(c, d, t0), check.HasLen, 0)
	why := a.Host + ": 2 tags, asked anonymously (no check-remote-auth-file)"
	lines := strings.Count(d.Log(), why)
	c.Check(lines >= 3 && float64(lines) <= after, check.Equals, true,
		check.Commentf("%d lines %q in %v rounds (%v before the wait); want one a round\n%s", lines, why, after, before, logTail(d)))
	c.Check(strings.Contains(d.Log(), b.Host+": 1 tags, asked anonymously"), check.Equals, true, check.Commentf("%s", logTail(d)))

	// 2. The file names A only; SIGHUP: exactly one outdated event, for
	// A's tag that moved; B is still asked anonymously.
	writeAuthFile(c, authFile, map[string]string{a.Host: watchAuthUserA + ":" + watchAuthPassA})
	writeCfg(true)
	t1 := time.Now()
	hup(c, d, "check-remote-auth-file: none → 1 registries")
	waitRounds(c, url, 2+3)
	evs := imageEvents(c, d, t1)
	c.Assert(evs, check.HasLen, 1, check.Commentf("%+v", evs))
	c.Check(evs[0].Action, check.Equals, "outdated")
	c.Check(evs[0].Actor.Attributes["name"], check.Equals, a.Host+"/wp/app:latest")
	c.Check(evs[0].Actor.Attributes["remoteDigest"], check.Equals, app2.Manifest.Digest)
	c.Check(scrapeURL(c, url).value(c, "wharf_images_outdated", map[string]string{"registry": a.Host}), check.Equals, 1.0)

	// A's credential never went to B or B's realm, which the rounds did
	// ask (anonymously): wharfd sent B no Basic credential at all. (A's
	// realm may have seen none either: the token the pull fetched with
	// the same credential is still cached.)
	credA := basicOf(watchAuthUserA, watchAuthPassA)
	c.Assert(atB.count() > 0 && atBRealm.count() > 0, check.Equals, true, check.Commentf("the rounds did not ask B: the check below proves nothing"))
	for name, h := range map[string]*authHeaders{"B": &atB, "B's realm": &atBRealm} {
		for _, v := range h.all() {
			c.Check(strings.HasPrefix(v, "Basic "), check.Equals, false, check.Commentf("%s got a Basic credential", name))
		}
	}
	c.Check(strings.Contains(d.Log(), b.Host+": 1 tags, asked anonymously (check-remote-auth-file has no credentials for it)"), check.Equals, true, check.Commentf("%s", logTail(d)))

	// 3. The file changes (B's set added); SIGHUP: B's tag, moved since
	// step 1, is reported — once.
	writeAuthFile(c, authFile, map[string]string{
		a.Host: watchAuthUserA + ":" + watchAuthPassA,
		b.Host: watchAuthUserB + ":" + watchAuthPassB,
	})
	t2 := time.Now()
	hup(c, d, "check-remote-auth-file: changed (2 registries")
	waitRounds(c, url, 2+2)
	evs = imageEvents(c, d, t2)
	c.Assert(evs, check.HasLen, 1, check.Commentf("%+v", evs))
	c.Check(evs[0].Action, check.Equals, "outdated")
	c.Check(evs[0].Actor.Attributes["name"], check.Equals, b.Host+"/wp/other:latest")
	for _, v := range append(atB.all(), atBRealm.all()...) {
		c.Check(v, check.Not(check.Equals), credA, check.Commentf("A's credential reached B"))
	}

	// 4. The file goes missing: the reload fails and the running
	// credentials stay (the rounds still read A and B: no errors).
	c.Assert(os.Remove(authFile), check.IsNil)
	hup(c, d, "reload failed")
	var failed string
	for _, l := range strings.Split(d.Log(), "\n") {
		if strings.Contains(l, "reload failed") {
			failed = l
		}
	}
	c.Check(strings.Contains(failed, `invalid value for \"check-remote-auth-file\"`) && strings.Contains(failed, "no such file or directory"), check.Equals, true, check.Commentf("%s", failed))
	t3 := time.Now()
	waitRounds(c, url, 2)
	c.Check(imageEvents(c, d, t3), check.HasLen, 0)
	c.Check(scrapeURL(c, url).value(c, "wharf_images_outdated", map[string]string{"registry": b.Host}), check.Equals, 1.0)

	// Never a password or an encoded credential in the log.
	log := d.Log()
	for _, secret := range []string{watchAuthPassA, watchAuthPassB, credA[len("Basic "):], basicOf(watchAuthUserB, watchAuthPassB)[len("Basic "):]} {
		c.Check(strings.Contains(log, secret), check.Equals, false, check.Commentf("a credential in the log"))
	}
}

// TestWatchAuthFileMissingAtStart: a daemon named a file that is not
// there does not start, and says which file and why.
func (s *CheckRemoteWatchAuthSuite) TestWatchAuthFileMissingAtStart(c *check.C) {
	missing := filepath.Join(c.MkDir(), "config.json")
	d := NewDaemon(c)
	err := d.StartWithError("--check-remote-interval", "1s", "--check-remote-auth-file", missing)
	c.Assert(err, check.NotNil, check.Commentf("wharfd started with a missing auth file"))
	c.Check(strings.Contains(d.Log(), `invalid value for "check-remote-auth-file"`) && strings.Contains(d.Log(), missing+": no such file or directory"),
		check.Equals, true, check.Commentf("%s", logTail(d)))
}

// TestWatchAuthFileCredentialHelper: a credHelpers entry runs a real
// docker-credential-NAME (a shell script on wharfd's PATH) once a round,
// with the registry's host on stdin, and its answer reads A's private tag:
// one outdated event when it moves. The helper's secret is not logged.
func (s *CheckRemoteWatchAuthSuite) TestWatchAuthFileCredentialHelper(c *check.C) {
	a := s.a
	dir := c.MkDir()
	calls := filepath.Join(dir, "calls")
	helper := filepath.Join(dir, "docker-credential-wharftest")
	script := "#!/bin/sh\n[ \"$1\" = get ] || exit 9\nread -r host\necho \"$host\" >> " + calls + "\n" +
		"if [ \"$host\" = \"" + a.Host + "\" ]; then printf '{\"ServerURL\":\"%s\",\"Username\":\"" + watchAuthUserA + "\",\"Secret\":\"" + watchAuthPassA + "\"}' \"$host\"; exit 0; fi\n" +
		"printf 'credentials not found in native keychain'; exit 1\n"
	c.Assert(os.WriteFile(helper, []byte(script), 0o755), check.IsNil)
	authFile := filepath.Join(dir, "config.json")
	c.Assert(os.WriteFile(authFile, []byte(`{"credHelpers":{"`+a.Host+`":"wharftest"}}`), 0o600), check.IsNil)

	// The helper's directory goes first on PATH for the daemon started
	// here only.
	d := NewDaemon(c)
	d.Env = []string{"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")}
	d.Start(c, "--check-remote-interval", "1s", "--check-remote-auth-file", authFile, "--metrics-addr", "127.0.0.1:0")
	s.daemons = append(s.daemons, d)
	url := watchMetrics(c, d)

	pushImage(c, a, "wh/app", "latest", testregistry.ImageOptions{})
	r, lines := d.Pull(c, a.Host+"/wh/app", "latest", auth(a))
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Assert(lines.Err(), check.Equals, "")
	t0 := time.Now()
	moved := pushImage(c, a, "wh/app", "latest", testregistry.ImageOptions{})
	before := scrapeURL(c, url).value(c, "wharf_check_remote_rounds_total", nil)
	after := waitRounds(c, url, 2+2)
	evs := imageEvents(c, d, t0)
	c.Assert(evs, check.HasLen, 1, check.Commentf("%+v\n%s", evs, logTail(d)))
	c.Check(evs[0].Action, check.Equals, "outdated")
	c.Check(evs[0].Actor.Attributes["name"], check.Equals, a.Host+"/wh/app:latest")
	c.Check(evs[0].Actor.Attributes["remoteDigest"], check.Equals, moved.Manifest.Digest)

	// One helper run per round, each for A's host exactly.
	b, err := os.ReadFile(calls)
	c.Assert(err, check.IsNil)
	runs := strings.Fields(string(b))
	for _, h := range runs {
		c.Check(h, check.Equals, a.Host)
	}
	c.Check(float64(len(runs)) >= after-before && float64(len(runs)) <= after+1, check.Equals, true,
		check.Commentf("%d helper runs, rounds %v → %v", len(runs), before, after))
	c.Check(strings.Contains(d.Log(), watchAuthPassA), check.Equals, false, check.Commentf("the helper's secret in the log"))
	c.Check(strings.Contains(d.Log(), "credential helper failed"), check.Equals, false, check.Commentf("%s", logTail(d)))
}
