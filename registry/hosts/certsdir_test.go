package hosts

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

func TestCertsDirTrustsCA(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	dir := t.TempDir()
	host := "myreg.example.com:5000"
	if err := os.MkdirAll(filepath.Join(dir, host), 0o755); err != nil {
		t.Fatal(err)
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, host, "ca.crt"), pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	conf, found, err := loadCertsDir([]string{filepath.Join(dir, "none"), dir}, host)
	if err != nil || !found {
		t.Fatalf("loadCertsDir: found %v, %v", found, err)
	}
	if _, err := srv.Certificate().Verify(x509.VerifyOptions{Roots: conf.RootCAs, DNSName: "example.com"}); err != nil {
		t.Errorf("CA from certs dir not trusted: %v", err)
	}
	if _, found, _ := loadCertsDir([]string{dir}, "other.example.com"); found {
		t.Errorf("certs dir of another host used")
	}
	// A lone client.cert is a configuration error, as in dockerd.
	if err := os.WriteFile(filepath.Join(dir, host, "client.cert"), pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := loadCertsDir([]string{dir}, host); err == nil {
		t.Errorf("client.cert without client.key accepted")
	}
}
