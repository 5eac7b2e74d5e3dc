package client

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
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
