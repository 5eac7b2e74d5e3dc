package transport

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wharfproject/wharf/registry/hosts"
)

// What each kind of peer makes of the probe.
func TestProbeSchemeOutcomes(t *testing.T) {
	tm := defaultTimeouts()
	tm.handshake = 300 * time.Millisecond
	tr := newHostTransports(hostsConfig(t), tm, nil)
	probe := func(host string) (int32, bool, error) {
		t.Helper()
		e, err := tr.forHost(context.Background(), host)
		if err != nil {
			t.Fatal(err)
		}
		return tr.probeScheme(context.Background(), e)
	}
	listen := func(handle func(net.Conn)) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go handle(c)
			}
		}()
		return ln.Addr().String()
	}

	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	// A TLS 1.2 server that wants a client certificate answers ours (none)
	// with an alert: it speaks TLS.
	mtls := httptest.NewUnstartedServer(http.NotFoundHandler())
	mtls.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert, MaxVersion: tls.VersionTLS12}
	mtls.Config.ErrorLog = log.New(io.Discard, "", 0)
	mtls.StartTLS()
	defer mtls.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	// Reads the whole ClientHello record (so that closing sends FIN, not
	// RST for unread data) and closes.
	closer := listen(func(c net.Conn) {
		hdr := make([]byte, 5)
		if _, err := io.ReadFull(c, hdr); err == nil {
			io.CopyN(io.Discard, c, int64(hdr[3])<<8|int64(hdr[4]))
		}
		c.Close()
	})
	// Never answers and closes only when the test ends (or after a minute,
	// so that a probe waiting on it fails the count below instead of
	// hanging): each connection the probe closes first is one it gave up
	// on by itself.
	hold := make(chan struct{})
	defer close(hold)
	var silentAccepted, silentAbandoned atomic.Int32
	abandoned := make(chan struct{}, 16)
	silent := listen(func(c net.Conn) {
		defer c.Close()
		silentAccepted.Add(1)
		gone := make(chan struct{})
		go func() { io.Copy(io.Discard, c); close(gone) }()
		select {
		case <-gone:
			silentAbandoned.Add(1)
			abandoned <- struct{}{}
		case <-hold:
		case <-time.After(time.Minute):
		}
	})
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()

	for _, tc := range []struct {
		name     string
		host     string
		scheme   int32
		remember bool
		err      bool
	}{
		{"tls", strings.TrimPrefix(tlsSrv.URL, "https://"), schemeHTTPS, true, false},
		{"tls with an alert", strings.TrimPrefix(mtls.URL, "https://"), schemeHTTPS, true, false},
		{"plain http", strings.TrimPrefix(plain.URL, "http://"), schemeHTTP, true, false},
		{"closes without a word", closer, schemeHTTP, false, false},
		{"silent", silent, schemeUnknown, false, true},
		{"nothing listening", deadAddr, schemeUnknown, false, true},
	} {
		sc, remember, err := probe(tc.host)
		if sc != tc.scheme || remember != tc.remember || (err != nil) != tc.err {
			t.Errorf("%s: scheme %d remember %v err %v; want %d %v error %v", tc.name, sc, remember, err, tc.scheme, tc.remember, tc.err)
		}
	}
	// The silent peer held every connection: the probe returned because
	// it closed each one itself (within its handshake timeout), not
	// because the peer let go. The wait is for the close to arrive.
	deadline := time.After(10 * time.Second)
	for n := int32(0); n == 0 || n < silentAccepted.Load(); n++ {
		select {
		case <-abandoned:
		case <-deadline:
			t.Fatalf("silent: the probe left %d of %d connections open", silentAccepted.Load()-silentAbandoned.Load(), silentAccepted.Load())
		}
	}
}

// A host whose set-up hangs (its CA file on a stuck file system, played by
// a FIFO nobody writes) holds up its own callers only, each until its own
// context ends; every other host is served meanwhile.
func TestHostSetUpDoesNotHoldOtherHosts(t *testing.T) {
	dir := t.TempDir()
	slow := "slow.example.com:5000"
	if err := os.MkdirAll(filepath.Join(dir, slow), 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, slow, "ca.crt")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tr := newHostTransports(hostsConfig(t, dir), defaultTimeouts(), nil)

	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	done := make(chan error, 1)
	go func() {
		_, err := tr.forHost(ctx, slow)
		done <- err
	}()
	// Wait until the set-up is inside the file system.
	var w *os.File
	for w == nil {
		fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			w = os.NewFile(uintptr(fd), fifo)
			break
		}
		select {
		case err := <-done:
			t.Fatalf("slow host answered before reading its CA file: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	defer w.Close()
	for _, h := range []string{"quay.io", "other.example.com:5000"} {
		hctx, hcancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := tr.forHost(hctx, h)
		hcancel()
		if err != nil {
			t.Errorf("%s while another host's set-up hangs: %v", h, err)
		}
	}
	leave()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("slow host's caller: %v, want its own context's end", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the slow host's caller did not return when its context ended")
	}
}

// The DNS look-up that insecure CIDRs need runs under the caller's context
// (bounded by the dial timeout), once per host, outside any lock; a failed
// look-up is not remembered.
func TestHostLookupIsPerHostAndHonoursContext(t *testing.T) {
	cfg, err := hosts.New(hosts.Options{InsecureRegistries: []string{"10.1.0.0/16"}})
	if err != nil {
		t.Fatal(err)
	}
	var lookups sync.Map // host → *atomic.Int64
	release := make(chan struct{})
	cfg.SetLookup(func(ctx context.Context, host string) ([]netip.Addr, error) {
		n, _ := lookups.LoadOrStore(host, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		if _, ok := ctx.Deadline(); !ok {
			t.Errorf("look-up of %s without a deadline", host)
		}
		switch host {
		case "stuck.example.com":
			select {
			case <-release:
				return nil, errors.New("no answer")
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case "inside.example.com":
			return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("192.0.2.1")}, nil
	})
	tr := newHostTransports(cfg, defaultTimeouts(), nil)
	stuck := make(chan *hostEntry, 1)
	go func() {
		e, _ := tr.forHost(context.Background(), "stuck.example.com")
		stuck <- e
	}()
	for i := 0; i < 2; i++ {
		e, err := tr.forHost(context.Background(), "inside.example.com")
		if err != nil || e.secure {
			t.Fatalf("inside.example.com: %+v %v, want insecure", e, err)
		}
		e, err = tr.forHost(context.Background(), "outside.example.com")
		if err != nil || !e.secure {
			t.Fatalf("outside.example.com: %+v %v, want secure", e, err)
		}
	}
	close(release)
	if e := <-stuck; e == nil || !e.secure {
		t.Errorf("failed look-up: %+v, want secure", e)
	}
	if _, err := tr.forHost(context.Background(), "stuck.example.com"); err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]int64{"inside.example.com": 1, "outside.example.com": 1, "stuck.example.com": 2} {
		n, _ := lookups.Load(host)
		if got := n.(*atomic.Int64).Load(); got != want {
			t.Errorf("%s looked up %d times, want %d", host, got, want)
		}
	}
}

// A host's certs directory is read once: what it held on first use stays.
func TestCertsDirReadOncePerHost(t *testing.T) {
	dir := t.TempDir()
	host := "myreg.example.com:5000"
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	if err := os.MkdirAll(filepath.Join(dir, host), 0o755); err != nil {
		t.Fatal(err)
	}
	writeCA(t, filepath.Join(dir, host, "ca.crt"), srv)
	tr := newHostTransports(hostsConfig(t, dir), defaultTimeouts(), nil)
	first, err := tr.forHost(context.Background(), host)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, host)); err != nil {
		t.Fatal(err)
	}
	again, err := tr.forHost(context.Background(), strings.ToUpper(host))
	if err != nil || again != first || again.tls.RootCAs == nil {
		t.Errorf("second use: %+v %v, want the first set-up", again, err)
	}
}

// writeCA writes srv's certificate as a PEM CA file.
func writeCA(t *testing.T, path string, srv *httptest.Server) {
	t.Helper()
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// hostsConfig is a configuration whose certs dirs are dirs (none given: one
// empty directory, so that the machine's /etc/docker/certs.d is not read).
func hostsConfig(t *testing.T, dirs ...string) *hosts.Config {
	t.Helper()
	if len(dirs) == 0 {
		dirs = []string{t.TempDir()}
	}
	c, err := hosts.New(hosts.Options{CertsDirs: dirs})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
