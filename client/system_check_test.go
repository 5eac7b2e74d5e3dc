package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSystemCheckPathAndReport(t *testing.T) {
	r, c := newRecorder(t, http.StatusOK, "application/json",
		`{"Full":false,"Images":2,"Blobs":7,"Problems":[{"Kind":"missing-blob","Image":"sha256:a","Object":"sha256:b","Message":"m"}]}`)
	rep, err := c.SystemCheck(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.last.URL.Path + "?" + r.last.URL.RawQuery; got != "/v"+DefaultVersion+"/wharf/system/check?full=0" {
		t.Fatalf("request %s", got)
	}
	if rep.Images != 2 || len(rep.Problems) != 1 || rep.Problems[0].Kind != "missing-blob" {
		t.Fatalf("%+v", rep)
	}
	if _, err := c.SystemCheck(context.Background(), true); err != nil || r.last.URL.RawQuery != "" {
		t.Fatalf("full: %v %q", err, r.last.URL.RawQuery)
	}
}

func TestDefaultTLSFilesPrecedence(t *testing.T) {
	env := func(kv map[string]string) Environment {
		return Environment{Getenv: func(k string) string { return kv[k] }, Geteuid: func() int { return 1000 }}
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOME": "/h"}, "/h/.docker"},
		{map[string]string{"HOME": "/h", "DOCKER_CERT_PATH": "/d"}, "/d"},
		{map[string]string{"HOME": "/h", "DOCKER_CERT_PATH": "/d", CertPathEnv: "/w"}, "/w"},
	} {
		f := DefaultTLSFiles(env(tc.env))
		if f.CACert != filepath.Join(tc.want, "ca.pem") || f.Cert != filepath.Join(tc.want, "cert.pem") || f.Key != filepath.Join(tc.want, "key.pem") {
			t.Errorf("%v: %+v", tc.env, f)
		}
	}
	if _, err := (TLSFiles{CACert: "/nonexistent/ca.pem"}).Config(); err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Errorf("missing CA: %v", err)
	}
}

func TestWithTLSSpeaksHTTPSOnTCPOnly(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("OK")) }))
	defer srv.Close()
	cfg := &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	c, err := New("tcp://"+strings.TrimPrefix(srv.URL, "https://"), WithTLS(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ping(context.Background()); err != nil {
		t.Fatalf("ping over TLS: %v", err)
	}
	u, err := New("unix:///nonexistent.sock", WithTLS(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if u.scheme != "http" {
		t.Fatalf("unix socket scheme %s", u.scheme)
	}
}

// TLSFiles.Config loads PEM files as the docker CLI does (tlsconfig): the CA
// file is the only root, TLS 1.2 or later, the client's certificate
// presented; a file over 1 MiB is refused before it is read.
func TestTLSFilesConfig(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("OK")) }))
	defer srv.Close()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// httptest's certificate is self-signed: it is the CA and, with its
	// key, the client's certificate too.
	key, err := x509.MarshalPKCS8PrivateKey(srv.TLS.Certificates[0].PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	files := TLSFiles{
		CACert: write("ca.pem", "CERTIFICATE", srv.Certificate().Raw),
		Cert:   write("cert.pem", "CERTIFICATE", srv.Certificate().Raw),
		Key:    write("key.pem", "PRIVATE KEY", key),
	}
	cfg, err := files.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS12 || len(cfg.Certificates) != 1 || cfg.CipherSuites != nil || cfg.InsecureSkipVerify {
		t.Fatalf("MinVersion %x, %d certificates, CipherSuites %v, InsecureSkipVerify %v", cfg.MinVersion, len(cfg.Certificates), cfg.CipherSuites, cfg.InsecureSkipVerify)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatalf("the daemon's certificate, signed by the CA file: %v", err)
	}
	resp.Body.Close()
	hc.CloseIdleConnections()

	big := write("big.pem", "CERTIFICATE", make([]byte, maxPEM))
	if _, err := (TLSFiles{CACert: big, Cert: files.Cert, Key: files.Key}).Config(); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a CA file over %d bytes: %v", maxPEM, err)
	}
}
