package registry

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A cold remote inspect of a plain-HTTP token registry on loopback: the
// GET /v2/ sent beside the scheme probe brings the challenge, so the
// manifest is asked once, with a token, on the ping's connection; the
// probe's round trip hides behind a request the flow makes anyway
// (issue 14: cold rows of bench case 1).
func TestColdInsecureInspectAsksTheManifestOnceWithAToken(t *testing.T) {
	f := newFakeRegistry(t)
	cl := countConnections(t, f)
	f.tokenAuth = true
	f.addImage("team/app", "1", "linux", "amd64", "")
	manifestAuth := recordManifestAuth(f)
	s := testService(t, ServiceOptions{})
	if _, err := s.Inspect(context.Background(), InspectRequest{Name: f.host() + "/team/app:1", Platform: linuxAmd64()}); err != nil {
		t.Fatal(err)
	}
	got := f.reset()
	if len(got) != 4 || got[0] != "GET /v2/" || got[1] != "GET /token" {
		t.Errorf("cold inspect: %v, want the ping, the token, the manifest and the config", got)
	}
	if got := manifestAuth(); len(got) != 1 || !got[0] {
		t.Errorf("manifest requests with credentials: %v, want one, with a token (no unauthenticated try first)", got)
	}
	if n := cl.others.Load(); n != 1 {
		t.Errorf("%d plain connections, want 1: the ping's, reused by every request", n)
	}
	if n := cl.tlsHellos.Load(); n != 1 {
		t.Errorf("%d TLS handshakes, want the 1 probe", n)
	}
}

// muxListener hands each accepted connection to tls or plain by its first
// byte (0x16: a TLS handshake). A TLS connection waits until the plain
// side has answered once (or a bound), so that the ping has been answered
// before the probe learns the host speaks TLS.
type muxListener struct {
	net.Listener
	tls, plain *chanListener
	answered   chan struct{}
}

type chanListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}
func (l *chanListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *chanListener) Addr() net.Addr { return l.addr }

type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (m *muxListener) serve() {
	for {
		c, err := m.Listener.Accept()
		if err != nil {
			return
		}
		go func() {
			br := bufio.NewReader(c)
			b, err := br.Peek(1)
			if err != nil {
				c.Close()
				return
			}
			to := m.plain
			if b[0] == 0x16 {
				to = m.tls
				select {
				case <-m.answered:
				case <-time.After(5 * time.Second): // no ping: the probe goes on
				}
			}
			select {
			case to.ch <- bufConn{Conn: c, r: br}:
			case <-to.done:
				c.Close()
			}
		}()
	}
}

// A registry that speaks TLS and, on the same port, answers plain HTTP
// with a challenge of its own (a man in the middle, or a confused front
// end): the inspect goes over TLS and nothing the plaintext answer said is
// used: the plaintext realm is never asked, and the first request over
// TLS is sent without a remembered challenge.
func TestTLSRegistryUsesNothingLearntFromThePlainPing(t *testing.T) {
	var evilHits atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		evilHits.Add(1)
		w.Write([]byte(`{"token":"evil"}`))
	}))
	defer evil.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &muxListener{
		Listener: ln,
		tls:      &chanListener{addr: ln.Addr(), ch: make(chan net.Conn), done: make(chan struct{})},
		plain:    &chanListener{addr: ln.Addr(), ch: make(chan net.Conn), done: make(chan struct{})},
		answered: make(chan struct{}),
	}
	var answeredOnce sync.Once
	var pings atomic.Int64
	plain := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pings.Add(1)
		w.Header().Set("Www-Authenticate", `Bearer realm="`+evil.URL+`/token",service="evil"`)
		writeErr(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
		w.(http.Flusher).Flush()
		answeredOnce.Do(func() { close(m.answered) })
	}))
	plain.Listener = m.plain
	plain.Start()
	defer plain.Close()

	f := newFakeRegistry(t)
	f.srv.Close()
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Listener = m.tls
	f.srv.StartTLS()
	defer f.srv.Close()
	go m.serve()
	defer ln.Close()
	f.tokenAuth = true
	f.addImage("team/app", "1", "linux", "amd64", "")
	manifestAuth := recordManifestAuth(f)

	s := testService(t, ServiceOptions{})
	if _, err := s.Inspect(context.Background(), InspectRequest{Name: f.host() + "/team/app:1", Platform: linuxAmd64()}); err != nil {
		t.Fatal(err)
	}
	if n := pings.Load(); n != 1 {
		t.Errorf("%d plain pings, want the 1 sent beside the probe", n)
	}
	if n := evilHits.Load(); n != 0 {
		t.Errorf("the realm of a plaintext answer was asked %d times for a TLS registry", n)
	}
	if got := manifestAuth(); len(got) != 2 || got[0] || !got[1] {
		t.Errorf("manifest requests with credentials: %v, want the unauthenticated try (its own challenge) and then the token", got)
	}
	if realm, ok := s.http.RememberedRealm(f.host()); !ok || !strings.HasPrefix(realm, f.srv.URL) {
		t.Errorf("remembered realm %q, want the TLS registry's own realm", realm)
	}
}

// recordManifestAuth notes, for each manifest request f serves, whether it
// carried credentials; the func returns them in order.
func recordManifestAuth(f *fakeRegistry) func() []bool {
	var mu sync.Mutex
	var seen []bool
	f.hook = func(_ http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "/manifests/") {
			mu.Lock()
			seen = append(seen, r.Header.Get("Authorization") != "")
			mu.Unlock()
		}
		return false
	}
	return func() []bool {
		mu.Lock()
		defer mu.Unlock()
		return append([]bool(nil), seen...)
	}
}
