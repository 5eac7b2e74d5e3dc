package daemon

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, all written as PEM files into dir.
type testPKI struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
	pool                                             *x509.CertPool
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(n int64, usage x509.ExtKeyUsage) ([]byte, []byte) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(n), Subject: pkix.Name{CommonName: "leaf"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kd, _ := x509.MarshalECPrivateKey(k)
		return der, kd
	}
	p := testPKI{pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.CA = write("ca.pem", "CERTIFICATE", caDER)
	sc, sk := leaf(2, x509.ExtKeyUsageServerAuth)
	p.ServerCert, p.ServerKey = write("server-cert.pem", "CERTIFICATE", sc), write("server-key.pem", "EC PRIVATE KEY", sk)
	cc, ck := leaf(3, x509.ExtKeyUsageClientAuth)
	p.ClientCert, p.ClientKey = write("cert.pem", "CERTIFICATE", cc), write("key.pem", "EC PRIVATE KEY", ck)
	return p
}

func TestTLSListenerRequiresClientCertificate(t *testing.T) {
	pki := newTestPKI(t)
	cfg, err := TLSOptions{Verify: true, CACert: pki.CA, Cert: pki.ServerCert, Key: pki.ServerKey}.serverConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS12 || cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.CipherSuites != nil {
		t.Fatalf("MinVersion %x, ClientAuth %v, CipherSuites %v: want TLS 1.2, RequireAndVerifyClientCert, Go's defaults", cfg.MinVersion, cfg.ClientAuth, cfg.CipherSuites)
	}
	ls, err := listen([]string{"tcp://127.0.0.1:0"}, cfg, false, logrus.NewEntry(logrus.New()))
	if err != nil {
		t.Fatal(err)
	}
	defer closeListener(ls[0])
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("OK")) }),
		ErrorLog: nil}
	go func() { _ = srv.Serve(ls[0]) }()
	defer srv.Close()
	url := "https://" + ls[0].Addr().String() + "/_ping"

	get := func(tc *tls.Config) error {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
		defer c.CloseIdleConnections()
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	// No client certificate: the handshake fails.
	if err := get(&tls.Config{RootCAs: pki.pool}); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	// A certificate from another CA: refused too.
	other := newTestPKI(t)
	otherPair, err := tls.LoadX509KeyPair(other.ClientCert, other.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(&tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{otherPair}}); err == nil {
		t.Fatal("a client certificate from another CA was accepted")
	}
	// Plain HTTP on the TLS port: no answer.
	if resp, err := http.Get("http://" + ls[0].Addr().String() + "/_ping"); err == nil {
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP was served")
		}
		resp.Body.Close()
	}
	pair, err := tls.LoadX509KeyPair(pki.ClientCert, pki.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(&tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pair}}); err != nil {
		t.Fatalf("a client with a good certificate: %v", err)
	}
}

func TestTLSOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o       TLSOptions
		wantErr string
	}{
		{TLSOptions{}, ""},
		{TLSOptions{Verify: true, CACert: "a", Cert: "b", Key: "c"}, ""},
		{TLSOptions{Verify: true, CACert: "a"}, "--tlscert --tlskey"},
		{TLSOptions{Cert: "b"}, "need --tlsverify"},
	} {
		err := tc.o.validate()
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%+v: err %v, want %q", tc.o, err, tc.wantErr)
		}
	}
	if _, err := (TLSOptions{Verify: true, CACert: "/nonexistent", Cert: "/nonexistent", Key: "/nonexistent"}).serverConfig(); err == nil {
		t.Error("missing files accepted")
	}
	big := filepath.Join(t.TempDir(), "big.pem")
	if err := os.WriteFile(big, make([]byte, maxPEMFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (TLSOptions{Verify: true, CACert: big, Cert: big, Key: big}).serverConfig(); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a file over %d bytes: %v", maxPEMFile, err)
	}
}

func TestTCPWithTLSVerifyPassesValidation(t *testing.T) {
	c := &Config{Root: "/x", LogLevel: "info", Hosts: []string{"tcp://127.0.0.1:2376"}}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--tlsverify") {
		t.Fatalf("plain tcp: %v", err)
	}
	c.TLSVerify, c.TLSCACert, c.TLSCert, c.TLSKey = true, "a", "b", "c"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
