package sigstore

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"
)

// A pki requirement accepts a leaf issued for code signing, or one that
// names no extended key usage (valid for any), and refuses one the same
// CA issued for a TLS server with the required host name.
func TestPKIRequiresCodeSigning(t *testing.T) {
	now := time.Now()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	root, err := newPKIRoot(&PKI{CARootsPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), SubjectHostname: "signer.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(eku ...x509.ExtKeyUsage) *x509.Certificate {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "signer.example.com"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: eku, DNSNames: []string{"signer.example.com"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, k.Public(), caKey)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c
	}
	for _, tc := range []struct {
		name    string
		eku     []x509.ExtKeyUsage
		wantErr string
	}{
		{"codeSigning", []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, ""},
		{"codeSigning among others", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageCodeSigning}, ""},
		{"no extension", nil, ""},
		{"serverAuth", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, "certificate is not for code signing (extended key usage serverAuth)"},
		{"serverAuth and clientAuth", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, "(extended key usage serverAuth, clientAuth)"},
	} {
		_, err := root.check(leaf(tc.eku...), nil, now)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}
