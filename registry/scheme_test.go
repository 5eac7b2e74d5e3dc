package registry

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// A loopback registry serving TLS is spoken to over TLS, one serving
// plain HTTP over plain HTTP; the remote inspect works both ways.
func TestLoopbackRegistryOverTLSAndPlainHTTP(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     *fakeRegistry
		plain bool
	}{
		{"tls", newTLSFakeRegistry(t), false},
		{"plain", newFakeRegistry(t), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.addImage("team/app", "1", "linux", "amd64", "")
			s := testService(t, ServiceOptions{})
			img, err := s.Inspect(context.Background(), InspectRequest{Name: tc.f.host() + "/team/app:1", Platform: linuxAmd64()})
			if err != nil {
				t.Fatal(err)
			}
			if img.Tag != "1" {
				t.Errorf("tag %q", img.Tag)
			}
			plain, err := s.http.Scheme(context.Background(), tc.f.host(), false)
			if err != nil {
				t.Fatal(err)
			}
			if plain != tc.plain {
				t.Errorf("remembered scheme: plain HTTP %v, want %v", plain, tc.plain)
			}
		})
	}
}

// countingListener counts accepted connections and what their first byte
// says: a TLS handshake (0x16) or anything else.
type countingListener struct {
	net.Listener
	tlsHellos, others atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &peekConn{Conn: c, l: l}, nil
}

type peekConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *peekConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.once.Do(func() {
			if p[0] == 0x16 {
				c.l.tlsHellos.Add(1)
			} else {
				c.l.others.Add(1)
			}
		})
	}
	return n, err
}

// countConnections restarts f's server (plain HTTP) on a countingListener.
func countConnections(t *testing.T, f *fakeRegistry) *countingListener {
	t.Helper()
	f.srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Listener = cl
	f.srv.Start()
	return cl
}

// The scheme is probed once per host: a second endpoint costs no handshake.
// For a plain registry the one probe is a single TLS ClientHello that
// never becomes an HTTP request, and one GET /v2/ goes beside it (its
// challenge and connection serve the first real request).
func TestSchemeProbeIsRememberedPerHost(t *testing.T) {
	f := newFakeRegistry(t)
	cl := countConnections(t, f)
	f.addImage("team/app", "1", "linux", "amd64", "")
	s := testService(t, ServiceOptions{})
	for i := 0; i < 3; i++ {
		if _, err := s.Inspect(context.Background(), InspectRequest{Name: f.host() + "/team/app:1", Platform: linuxAmd64()}); err != nil {
			t.Fatal(err)
		}
	}
	if n := cl.tlsHellos.Load(); n != 1 {
		t.Errorf("%d TLS handshakes to a plain registry, want the 1 probe", n)
	}
	pings := 0
	for _, r := range f.reset() {
		if r == "GET /v2/" {
			pings++
		}
	}
	if pings != 1 {
		t.Errorf("%d GET /v2/ over 3 inspects, want the probe's one ping", pings)
	}
	if n := cl.others.Load(); n != 1 {
		t.Errorf("%d plain connections, want 1: the ping's, reused", n)
	}
}
