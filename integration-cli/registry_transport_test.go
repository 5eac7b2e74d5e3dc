package integration

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// RegistryTransportSuite: how wharfd reaches registries — per-host
// transports, the scheme of loopback and insecure registries, shared token
// fetches, upload stalls, challenge and token parsing, credentials in server
// addresses, and the registry timeout setting (issue 10, findings 6-10, 12
// and 13).
type RegistryTransportSuite struct{}

func TestRegistryTransportSuite(t *testing.T) { t.Parallel(); runSuite(t, &RegistryTransportSuite{}) }

func (s *RegistryTransportSuite) SetUpSuite(c *check.C) { needBinaries(c) }

// transportTimeout is the --registry-timeout of the daemons here that meet
// a silent or stalling registry: long enough for a loaded CI machine to
// answer a real registry, short enough to keep each case to seconds.
const transportTimeout = 2 * time.Second

// The registry timeout is a daemon setting: --registry-timeout and
// "registry-timeout" in daemon.json both shorten the wait on a registry
// that accepts connections and never answers (30 s per try by default).
// The old environment variable is no longer read, and wharfd says so.
func (s *RegistryTransportSuite) TestRegistryTimeoutIsAFlagAndAConfigKey(c *check.C) {
	cfgFile := filepath.Join(c.MkDir(), "daemon.json")
	c.Assert(os.WriteFile(cfgFile, []byte(`{"registry-timeout":"`+transportTimeout.String()+`"}`), 0o600), check.IsNil)
	for _, args := range [][]string{
		{"--registry-timeout", transportTimeout.String()},
		{"--config-file", cfgFile},
	} {
		d := StartDaemon(c, args...)
		srv, err := hostile.Silent()
		c.Assert(err, check.IsNil)
		r := d.remoteInspect(c, srv.Host+"/team/app:1", "")
		srv.Close()
		c.Check(r.Status >= 500, check.Equals, true, check.Commentf("%v: %s", args, r))
		c.Check(strings.Contains(r.Message(), srv.Host), check.Equals, true, check.Commentf("%v: %s", args, r.Message()))
		// The error names the bounds that applied: the setting, not the
		// default 30 s (which would also make this wait 90 s).
		c.Check(strings.Contains(r.Message(), "response headers "+transportTimeout.String()), check.Equals, true, check.Commentf("%v: %s", args, r.Message()))
		d.Stop(c)
	}

	d := startDaemonEnv(c, []string{"WHARF_REGISTRY_TIMEOUT=2s"})
	defer d.Stop(c)
	var info struct{ Warnings []string }
	d.Get(c, "/v1.50/info").JSON(c, &info)
	c.Check(strings.Join(info.Warnings, "\n"), check.Matches, `(?s).*WHARF_REGISTRY_TIMEOUT=2s is ignored.*--registry-timeout.*`)
	c.Check(d.Log(), check.Matches, `(?s).*level=warning msg="WHARF_REGISTRY_TIMEOUT=2s is ignored.*`)
}

// X-Registry-Auth is capped at 64 KiB (docs/architecture.md): a larger
// header is refused with a 400 that says why, on every route that takes
// credentials, before any registry is contacted.
func (s *RegistryTransportSuite) TestOversizedRegistryAuthHeaderIsRefused(c *check.C) {
	d := StartDaemon(c)
	defer d.Stop(c)
	reg, err := hostile.Start(hostile.Options{})
	c.Assert(err, check.IsNil)
	defer reg.Close()
	huge := RegistryAuth("u", strings.Repeat("p", 64<<10), reg.Host)
	c.Assert(len(huge) > 64<<10, check.Equals, true)
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/v1.50/images/" + reg.Ref() + "/json?remote=1"},
		{http.MethodPost, "/v1.50/images/create?fromImage=" + reg.Name() + "&tag=" + reg.Tag},
		{http.MethodPost, "/v1.50/images/" + reg.Name() + "/push?tag=" + reg.Tag},
		{http.MethodGet, "/v1.50/distribution/" + reg.Ref() + "/json"},
	} {
		r := d.Req(c, req.method, req.path, nil, "X-Registry-Auth", huge)
		c.Check(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s %s: %s", req.method, req.path, r))
		c.Check(r.Message(), check.Matches, `X-Registry-Auth header is \d+ bytes, larger than the 65536 allowed`, check.Commentf("%s %s", req.method, req.path))
	}
	c.Check(len(reg.Seen()), check.Equals, 0, check.Commentf("the registry was contacted: %v", reg.Seen()))
	// A small header still works.
	small := base64.URLEncoding.EncodeToString([]byte(`{}`))
	r := d.Req(c, http.MethodGet, "/v1.50/images/"+reg.Ref()+"/json?remote=1", nil, "X-Registry-Auth", small)
	c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
}

// asyncGet sends GET path to wharfd in the background; the answer (or the
// client's error) arrives on the channel. cancel abandons the request.
func (d *Daemon) asyncGet(path string, hdr ...string) (<-chan asyncResult, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan asyncResult, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://wharfd"+path, nil)
		if err != nil {
			ch <- asyncResult{err: err}
			return
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		cl := d.HTTPClient()
		cl.Transport.(*http.Transport).DisableKeepAlives = true
		resp, err := cl.Do(req)
		if err != nil {
			ch <- asyncResult{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		ch <- asyncResult{Response: Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, err: err}
	}()
	return ch, cancel
}

type asyncResult struct {
	Response
	err error
}

// awaitResult waits up to timeout for an asynchronous answer.
func awaitResult(c *check.C, ch <-chan asyncResult, timeout time.Duration, what string) asyncResult {
	select {
	case r := <-ch:
		return r
	case <-time.After(timeout):
		c.Fatalf("%s: no answer within %s", what, timeout)
		return asyncResult{}
	}
}

// fifoReader reports whether some process has the FIFO at path open for
// reading (or is blocked opening it): a non-blocking open for writing
// succeeds only then. The returned writer must be closed to let the
// reader see end of file.
func fifoReader(path string) (*os.File, bool) {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false // ENXIO: no reader yet
	}
	return os.NewFile(uintptr(fd), path), true
}

// A registry whose set-up is slow must not hold up any other registry:
// wharfd reads each host's certs directory (and resolves its name when
// insecure CIDRs need it) once, outside any lock shared with other hosts.
// The slow file system is played by a FIFO as the CA file of one host:
// opening it blocks until the test opens the other end.
func (s *RegistryTransportSuite) TestSlowSetUpOfOneRegistryDoesNotStallOthers(c *check.C) {
	reg, err := testregistry.Start(testregistry.Options{})
	c.Assert(err, check.IsNil)
	defer reg.Close()
	pushImage(c, reg, "team/app", "1", testregistry.ImageOptions{})

	certs := c.MkDir()
	slowHost := freeTCPAddr(c)
	c.Assert(os.MkdirAll(filepath.Join(certs, slowHost), 0o755), check.IsNil)
	fifo := filepath.Join(certs, slowHost, "ca.crt")
	c.Assert(syscall.Mkfifo(fifo, 0o644), check.IsNil)

	d := StartDaemon(c, "--registry-certs-dir", certs)
	defer d.Stop(c)

	slow, cancelSlow := d.asyncGet("/v1.50/images/" + slowHost + "/team/app:1/json?remote=1")
	defer cancelSlow()
	var w *os.File
	c.Assert(waitFor(30*time.Second, func() bool {
		var ok bool
		w, ok = fifoReader(fifo)
		return ok
	}), check.Equals, true, check.Commentf("wharfd never opened %s", fifo))
	// wharfd is now blocked reading the slow host's CA file. Another
	// registry answers as usual, and twice (the second time from a
	// transport already built).
	for i := 0; i < 2; i++ {
		ch, cancel := d.asyncGet("/v1.50/images/" + reg.Host + "/team/app:1/json?remote=1")
		r := awaitResult(c, ch, 20*time.Second, "remote inspect of the healthy registry while another one's set-up is stuck")
		cancel()
		c.Assert(r.err, check.IsNil)
		c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r.Response))
	}
	// The stuck set-up ends when its file does: an empty CA file is an
	// error naming the registry and the file.
	c.Assert(w.Close(), check.IsNil)
	var r asyncResult
	select {
	case r = <-slow:
	case <-time.After(30 * time.Second):
		// A stuck answer: wharfd's goroutines (Go's SIGQUIT dump, into
		// its log) say where.
		_ = syscall.Kill(d.pid(), syscall.SIGQUIT)
		d.Exited(10 * time.Second)
		l := d.Log()
		c.Fatalf("remote inspect of the slow registry: no answer within 30s; wharfd's log and goroutines:\n%s", l[max(0, len(l)-60000):])
	}
	c.Assert(r.err, check.IsNil)
	c.Check(r.Status >= 500, check.Equals, true, check.Commentf("%s", r.Response))
	c.Check(r.Message(), check.Matches, ".*"+regexp.QuoteMeta(slowHost)+".*no certificate found in "+regexp.QuoteMeta(fifo)+".*")
}

// A host's transport is built once: certs.d is not read again for every
// request (a directory created for the host after its first request is
// not seen until wharfd restarts, which docs/security.md says).
func (s *RegistryTransportSuite) TestCertsDirIsReadOncePerHost(c *check.C) {
	reg, err := testregistry.Start(testregistry.Options{})
	c.Assert(err, check.IsNil)
	defer reg.Close()
	pushImage(c, reg, "team/app", "1", testregistry.ImageOptions{})
	certs := c.MkDir()
	d := StartDaemon(c, "--registry-certs-dir", certs)
	defer d.Stop(c)
	r := d.remoteInspect(c, reg.Host+"/team/app:1", "")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))

	// Had wharfd read the directory again, opening the FIFO would block
	// the next request until the test gave up on it.
	c.Assert(os.MkdirAll(filepath.Join(certs, reg.Host), 0o755), check.IsNil)
	fifo := filepath.Join(certs, reg.Host, "ca.crt")
	c.Assert(syscall.Mkfifo(fifo, 0o644), check.IsNil)
	defer func() {
		if w, ok := fifoReader(fifo); ok {
			w.Close()
		}
	}()
	ch, cancel := d.asyncGet("/v1.50/images/" + reg.Host + "/team/app:1/json?remote=1")
	defer cancel()
	res := awaitResult(c, ch, 20*time.Second, "second remote inspect")
	c.Assert(res.err, check.IsNil)
	c.Check(res.Status, check.Equals, http.StatusOK, check.Commentf("%s", res.Response))
	_, opened := fifoReader(fifo)
	c.Check(opened, check.Equals, false, check.Commentf("wharfd read the certs dir again"))
}

// A registry on 127.0.0.1 is reached whether it serves TLS (an SSH tunnel
// or port-forward to a real registry, a local registry with a certificate)
// or plain HTTP: remote inspect, pull and push work both ways. wharfd
// finds out with one TLS handshake per host and remembers the answer: a
// later request costs no probe and no new connection. The real registry
// is reached through a TCP relay that counts connections and whether each
// began with a TLS handshake.
func (s *RegistryTransportSuite) TestLoopbackRegistryOverTLSAndPlainHTTP(c *check.C) {
	for _, mode := range []string{"tls", "plain"} {
		opts := testregistry.Options{}
		if mode == "tls" {
			pki := newTestPKI(c)
			opts.TLSCert, opts.TLSKey = pki.ServerCert, pki.ServerKey
		}
		reg, err := testregistry.Start(opts)
		c.Assert(err, check.IsNil)
		pushImage(c, reg, "team/app", "1", testregistry.ImageOptions{})
		pushImage(c, reg, "team/other", "1", testregistry.ImageOptions{})
		direct := strings.TrimPrefix(strings.TrimPrefix(reg.DirectURL, "https://"), "http://")
		cc, err := testregistry.NewConnCounter(direct)
		c.Assert(err, check.IsNil)
		d := StartDaemon(c)

		r := d.Get(c, "/v1.50/images/"+cc.Host+"/team/app:1/json?remote=1")
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: %s", mode, r))
		afterFirst := cc.Conns.Load()
		c.Check(cc.TLS.Load() >= 1, check.Equals, true, check.Commentf("%s: TLS was never tried", mode))
		// The second request: no probe, and the kept-alive connection.
		r = d.Get(c, "/v1.50/images/"+cc.Host+"/team/other:1/json?remote=1")
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: %s", mode, r))
		c.Check(cc.Conns.Load(), check.Equals, afterFirst, check.Commentf("%s: the second request opened %d connection(s)", mode, cc.Conns.Load()-afterFirst))

		pr, lines := d.Pull(c, cc.Host+"/team/app", "1", "")
		c.Check(pr.Status, check.Equals, http.StatusOK, check.Commentf("%s: pull: %s", mode, pr))
		c.Check(lines.Err(), check.Equals, "", check.Commentf("%s: pull", mode))
		r = d.Req(c, http.MethodPost, "/v1.50/images/"+cc.Host+"/team/app:1/tag?repo="+cc.Host+"/team/pushed&tag=2", nil)
		c.Assert(r.Status, check.Equals, http.StatusCreated, check.Commentf("%s: tag: %s", mode, r))
		pr, lines = d.Push(c, cc.Host+"/team/pushed", "2", "")
		c.Check(pr.Status, check.Equals, http.StatusOK, check.Commentf("%s: push: %s", mode, pr))
		c.Check(lines.Err(), check.Equals, "", check.Commentf("%s: push", mode))
		r = d.Get(c, "/v1.50/images/"+cc.Host+"/team/pushed:2/json?remote=1")
		c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: inspect after push: %s", mode, r))
		if mode == "plain" {
			// One refused ClientHello in all: the answer was remembered.
			c.Check(cc.TLS.Load(), check.Equals, int64(1), check.Commentf("TLS handshakes to a plain registry"))
		}
		c.Logf("%s: %d connections (%d TLS, %d plain)", mode, cc.Conns.Load(), cc.TLS.Load(), cc.Plain.Load())
		d.Stop(c)
		cc.Close()
		reg.Close()
	}
}

// Clients asking a registry for the same token share one token request; the
// first client leaving must not fail the others. A pull (whose registry
// requests run under its client's context) starts the token request, held
// at the token server; a remote inspect of the same repository waits on
// it; the pull's client disconnects; the token server answers. The inspect
// must succeed, and with that one token request. (Had the shared fetch
// died with the pull, the inspect either fails with "context canceled" or,
// had it not joined yet, asks for a second token.)
func (s *RegistryTransportSuite) TestOneClientLeavingDoesNotFailAnotherWaitingOnTheSameToken(c *check.C) {
	reg, err := testregistry.Start(testregistry.Options{Auth: testregistry.AuthToken, AnonymousPull: true})
	c.Assert(err, check.IsNil)
	defer reg.Close()
	pushImage(c, reg, "team/app", "1", testregistry.ImageOptions{})
	d := StartDaemon(c)
	defer d.Stop(c)
	reg.ResetCounters()

	arrived := make(chan struct{}, 8)
	release := make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	reg.TokenCounter.SetBefore(func(r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})

	pullCtx, leave := context.WithCancel(context.Background())
	defer leave()
	pullDone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(pullCtx, http.MethodPost, "http://wharfd/v1.50/images/create?fromImage="+reg.Host+"/team/app&tag=1", nil)
		resp, err := d.HTTPClient().Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		pullDone <- err
	}()
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		c.Fatalf("the pull's token request never reached the token server\n%s", logTail(d))
	}
	inspect, cancelInspect := d.asyncGet("/v1.50/images/" + reg.Host + "/team/app:1/json?remote=1")
	defer cancelInspect()
	leave()
	<-pullDone
	// wharfd has finished the pull's request (its debug request log) before
	// the token server answers.
	pullLogged := regexp.MustCompile(`msg="API request".* method=POST .*path=/v1.50/images/create `)
	c.Assert(waitFor(30*time.Second, func() bool {
		return pullLogged.MatchString(d.Log())
	}), check.Equals, true, check.Commentf("wharfd never ended the abandoned pull\n%s", logTail(d)))
	close(release)
	released = true

	r := awaitResult(c, inspect, 60*time.Second, "remote inspect waiting on the same token")
	c.Assert(r.err, check.IsNil)
	c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r.Response))
	c.Check(reg.TokenCounter.Count("GET token"), check.Equals, 1, check.Commentf("token requests: %v", reg.TokenCounter.Requests()))
}

// A registry behind a front end that offers Negotiate (Kerberos) before
// the registry's own Bearer challenge — as a second WWW-Authenticate
// header, or first in one header — still works: login, remote inspect and
// pull consider every challenge and answer the Bearer one.
func (s *RegistryTransportSuite) TestNegotiateBeforeBearerChallenge(c *check.C) {
	reg, err := testregistry.Start(testregistry.Options{Auth: testregistry.AuthToken})
	c.Assert(err, check.IsNil)
	defer reg.Close()
	pushImage(c, reg, "team/app", "1", testregistry.ImageOptions{})
	for _, mode := range []struct {
		name    string
		rewrite func(h http.Header)
	}{
		{"two headers", func(h http.Header) {
			h["Www-Authenticate"] = append([]string{"Negotiate"}, h.Values("Www-Authenticate")...)
		}},
		{"one header", func(h http.Header) {
			h.Set("Www-Authenticate", "Negotiate, "+h.Get("Www-Authenticate"))
		}},
	} {
		front, err := hostile.NewRewriteProxy(reg.URL, func(resp *http.Response) error {
			if resp.StatusCode == http.StatusUnauthorized {
				mode.rewrite(resp.Header)
			}
			return nil
		})
		c.Assert(err, check.IsNil)
		d := StartDaemon(c)
		creds := RegistryAuth(reg.Username, reg.Password, front.Host)

		body := `{"username":"` + reg.Username + `","password":"` + reg.Password + `","serveraddress":"` + front.Host + `"}`
		r := d.Req(c, http.MethodPost, "/v1.50/auth", strings.NewReader(body))
		c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: login: %s", mode.name, r))
		r = d.Get(c, "/v1.50/images/"+front.Host+"/team/app:1/json?remote=1", "X-Registry-Auth", creds)
		c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: remote inspect: %s", mode.name, r))
		pr, lines := d.Pull(c, front.Host+"/team/app", "1", creds)
		c.Check(pr.Status, check.Equals, http.StatusOK, check.Commentf("%s: pull: %s", mode.name, pr))
		c.Check(lines.Err(), check.Equals, "", check.Commentf("%s: pull", mode.name))
		d.Stop(c)
		front.Close()
	}
}

// expires_in beyond what a time.Duration holds (~292 years) no longer
// reads as already expired: the token is kept (up to a day), so a warm
// remote inspect asks for no new token.
func (s *RegistryTransportSuite) TestHugeTokenLifetimeIsKept(c *check.C) {
	reg, err := testregistry.Start(testregistry.Options{Auth: testregistry.AuthToken, AnonymousPull: true})
	c.Assert(err, check.IsNil)
	defer reg.Close()
	pushImage(c, reg, "team/app", "1", testregistry.ImageOptions{})
	reg.Token.SetExpiresIn(10_000_000_000) // 317 years
	d := StartDaemon(c)
	defer d.Stop(c)
	reg.ResetCounters()
	r := d.Get(c, "/v1.50/images/"+reg.Host+"/team/app:1/json?remote=1")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Assert(reg.TokenCounter.Count("GET token"), check.Equals, 1, check.Commentf("%v", reg.RequestLog()))
	reg.ResetCounters()
	r = d.Get(c, "/v1.50/images/"+reg.Host+"/team/app:1/json?remote=1")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Check(reg.TokenCounter.Count("GET token"), check.Equals, 0, check.Commentf("warm inspect: %v", reg.RequestLog()))
}

// A server address with credentials in it (http://user:PASSWORD@host) is
// refused without repeating them: docs/security.md promises that no
// password comes back in an answer or a log line.
func (s *RegistryTransportSuite) TestServerAddressCredentialsAreNeverEchoed(c *check.C) {
	reg, err := testregistry.Start(testregistry.Options{Auth: testregistry.AuthBasic})
	c.Assert(err, check.IsNil)
	defer reg.Close()
	d := StartDaemon(c)
	defer d.Stop(c)
	const user, secret = "leakyuser", "S3cretPa55-in-URL"
	for _, addr := range []string{
		"http://" + user + ":" + secret + "@" + reg.Host,
		"https://" + user + ":" + secret + "@" + reg.Host + "/v2/",
		user + ":" + secret + "@" + reg.Host,
		secret + "@" + reg.Host,
	} {
		body := `{"username":"` + reg.Username + `","password":"` + reg.Password + `","serveraddress":"` + addr + `"}`
		r := d.Req(c, http.MethodPost, "/v1.50/auth", strings.NewReader(body))
		c.Check(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s: %s", addr, r))
		c.Check(containsFold(string(r.Body), secret), check.Equals, false, check.Commentf("%s: %s", addr, r))
		c.Check(containsFold(string(r.Body), user), check.Equals, false, check.Commentf("%s: %s", addr, r))
		c.Check(r.Message(), check.Matches, ".*credentials in the server address.*", check.Commentf("%s", addr))
	}
	// The wharf CLI says the same, without the secret.
	res := runCmd(c, nil, d.cliEnv(), bins.Wharf, "login", "-u", reg.Username, "-p", reg.Password, "http://"+user+":"+secret+"@"+reg.Host)
	c.Check(res.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", res))
	c.Check(containsFold(res.Stdout+res.Stderr, secret), check.Equals, false, check.Commentf("%s", res))
	c.Check(containsFold(d.Log(), secret), check.Equals, false, check.Commentf("wharfd logged the password"))
}

// containsFold is strings.Contains ignoring case: host names are lowered
// on their way into messages, and a password with them.
func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
