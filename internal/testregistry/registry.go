package testregistry

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// AuthMode is how the registry guards its API.
type AuthMode int

const (
	// AuthNone is an anonymous registry.
	AuthNone AuthMode = iota
	// AuthBasic is htpasswd basic auth.
	AuthBasic
	// AuthToken is bearer-token auth backed by a TokenServer.
	AuthToken
)

func (m AuthMode) String() string {
	switch m {
	case AuthBasic:
		return "basic"
	case AuthToken:
		return "token"
	}
	return "anonymous"
}

// Default credentials of the auth modes.
const (
	DefaultUsername = "wharfuser"
	DefaultPassword = "s3cr3t-Pa55word-9731"
)

// Options configure Start.
type Options struct {
	Auth AuthMode
	// Users are name → password; default {DefaultUsername: DefaultPassword}.
	Users map[string]string
	// AnonymousPull lets token-mode anonymous clients pull.
	AnonymousPull bool
	// ProxyRemoteURL makes the registry a pull-through cache of that registry;
	// ProxyUsername/ProxyPassword are its credentials upstream.
	ProxyRemoteURL string
	ProxyUsername  string
	ProxyPassword  string
	// ProxyTTL and Redis: see proxy.go.
	ProxyTTL time.Duration
	Redis    string
	// TokenRealm replaces the token realm (default TokenCounter.URL/token),
	// for a Front that serves registry and tokens on one host (proxy.go).
	TokenRealm string
	// Dir holds storage, config and log; default a new temp dir that Close removes.
	Dir string
	// TLSCert and TLSKey (PEM files) make the registry serve HTTPS;
	// DirectURL is then https://, and the counting proxy serves HTTPS too
	// (with httptest's own certificate: clients must skip verification,
	// as wharfd does for loopback registries).
	TLSCert, TLSKey string
}

// Registry is a running distribution registry. Clients should use Host/URL,
// which go through a request Counter; DirectURL bypasses it.
type Registry struct {
	// Host is host:port through the counting proxy, e.g. for image names.
	Host string
	// URL is http://Host.
	URL string
	// DirectURL is the registry itself.
	DirectURL string
	// Counter counts the requests to Host.
	Counter *Counter
	// Token and TokenCounter are set in AuthToken mode; the registry's realm
	// points at TokenCounter, so token requests are counted too.
	Token        *TokenServer
	TokenCounter *Counter

	Auth     AuthMode
	Username string
	Password string
	// Dir holds config.yml, storage/ and registry.log.
	Dir     string
	LogPath string

	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	ownDir  bool
}

// readyTimeout bounds the wait for GET /v2/ to answer: the registry is up in
// well under a second; 20 s leaves room for a loaded 2-core CI machine.
const readyTimeout = 20 * time.Second

// Start starts a registry on 127.0.0.1 with a free port. The caller must Close it.
func Start(opts Options) (*Registry, error) {
	bin, err := BuildBinary()
	if err != nil {
		return nil, err
	}
	r := &Registry{Auth: opts.Auth, Dir: opts.Dir, done: make(chan struct{})}
	if r.Dir == "" {
		d, err := os.MkdirTemp("", "wharf-registry-")
		if err != nil {
			return nil, fmt.Errorf("testregistry: %w", err)
		}
		r.Dir, r.ownDir = d, true
	}
	ok := false
	defer func() {
		if !ok {
			r.Close()
		}
	}()
	users := opts.Users
	if len(users) == 0 && opts.Auth != AuthNone {
		users = map[string]string{DefaultUsername: DefaultPassword}
	}
	for u, p := range users {
		if r.Username == "" || u == DefaultUsername {
			r.Username, r.Password = u, p
		}
	}

	var authYAML string
	switch opts.Auth {
	case AuthBasic:
		path := filepath.Join(r.Dir, "htpasswd")
		if err := writeHtpasswd(path, users); err != nil {
			return nil, err
		}
		authYAML = fmt.Sprintf("auth:\n  htpasswd:\n    realm: %q\n    path: %q\n", "wharf-test", path)
	case AuthToken:
		ts, err := NewTokenServer(r.Dir, users, opts.AnonymousPull)
		if err != nil {
			return nil, err
		}
		r.Token = ts
		if r.TokenCounter, err = NewCounter(ts.URL); err != nil {
			return nil, err
		}
		realm := r.TokenCounter.URL + "/token"
		if opts.TokenRealm != "" {
			realm = opts.TokenRealm
		}
		authYAML = fmt.Sprintf("auth:\n  token:\n    realm: %q\n    service: %q\n    issuer: %q\n    rootcertbundle: %q\n",
			realm, ts.Service, ts.Issuer, ts.CertPath)
	}
	var tlsYAML string
	if opts.TLSCert != "" {
		tlsYAML = fmt.Sprintf("  tls:\n    certificate: %q\n    key: %q\n", opts.TLSCert, opts.TLSKey)
	}
	proxyYAML := proxyConfigYAML(opts)

	// A port chosen by listening on :0 can be taken before the registry binds
	// it; retry a few times rather than fail the suite.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %q
%s  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %q
  secret: wharf-test-secret
%s%s%s`, filepath.Join(r.Dir, "storage"), storageCacheYAML(opts), addr, tlsYAML, authYAML, proxyYAML)
		cfgPath := filepath.Join(r.Dir, "config.yml")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			return nil, fmt.Errorf("testregistry: %w", err)
		}
		scheme := "http"
		if opts.TLSCert != "" {
			scheme = "https"
		}
		if lastErr = r.launch(bin, cfgPath, scheme, addr); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		return nil, lastErr
	}
	c, err := NewCounter(r.DirectURL)
	if err != nil {
		return nil, err
	}
	r.Counter, r.Host, r.URL = c, c.Host, c.URL
	ok = true
	return r, nil
}

func (r *Registry) launch(bin, cfgPath, scheme, addr string) error {
	r.LogPath = filepath.Join(r.Dir, "registry.log")
	logf, err := os.OpenFile(r.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testregistry: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Tracing would try to export to an OTLP collector on localhost.
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testregistry: start registry: %w", err)
	}
	done := make(chan struct{})
	r.cmd, r.done = cmd, done
	go func() { r.waitErr = cmd.Wait(); close(done) }()
	r.DirectURL = scheme + "://" + addr
	if err := waitReady(r.DirectURL, done); err != nil {
		r.kill()
		logb, _ := os.ReadFile(r.LogPath)
		return fmt.Errorf("testregistry: registry on %s not ready: %w\n%s", addr, err, tail(logb, 4096))
	}
	return nil
}

// waitReady polls GET /v2/ until the registry answers (200, or 401 with auth)
// or the process exits, within readyTimeout.
func waitReady(base string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second, Transport: insecureTransport()}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v2/", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("registry exited")
		case <-ctx.Done():
			return fmt.Errorf("no answer on %s/v2/ within %s (last error: %v)", base, readyTimeout, err)
		case <-tick.C:
		}
	}
}

// insecureTransport skips TLS verification: the test registries on
// 127.0.0.1 use throw-away certificates.
func insecureTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // test registries only
	return t
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testregistry: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func writeHtpasswd(path string, users map[string]string) error {
	var b strings.Builder
	for u, p := range users {
		// bcrypt.MinCost keeps start-up fast; the registry accepts any cost.
		h, err := bcrypt.GenerateFromPassword([]byte(p), bcrypt.MinCost)
		if err != nil {
			return fmt.Errorf("testregistry: bcrypt: %w", err)
		}
		fmt.Fprintf(&b, "%s:%s\n", u, h)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("testregistry: %w", err)
	}
	return nil
}

// Stop kills the registry process but keeps the counting proxies up (they
// answer 502), and its storage; used for "registry down" tests.
func (r *Registry) Stop() { r.kill() }

func (r *Registry) kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// Close stops the registry, the token server and the proxies, and removes the
// temp dir it created.
func (r *Registry) Close() {
	r.kill()
	if r.Counter != nil {
		r.Counter.Close()
	}
	if r.TokenCounter != nil {
		r.TokenCounter.Close()
	}
	if r.Token != nil {
		r.Token.Close()
	}
	if r.ownDir {
		_ = os.RemoveAll(r.Dir)
	}
}

// ResetCounters resets the registry's and the token server's counters.
func (r *Registry) ResetCounters() {
	r.Counter.Reset()
	if r.TokenCounter != nil {
		r.TokenCounter.Reset()
	}
}

// Requests is the registry's plus the token server's requests since the last reset.
func (r *Registry) Requests() int {
	n := r.Counter.Total()
	if r.TokenCounter != nil {
		n += r.TokenCounter.Total()
	}
	return n
}

// RequestLog lists every counted request, token server first, for messages.
func (r *Registry) RequestLog() []string {
	var out []string
	if r.TokenCounter != nil {
		for _, s := range r.TokenCounter.Requests() {
			out = append(out, "token: "+s)
		}
	}
	return append(out, r.Counter.Requests()...)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
