package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"gopkg.in/check.v1"
)

// testPKI is a throw-away CA with a server certificate for 127.0.0.1 and a
// client certificate, written as PEM files in Dir using the docker CLI's
// names (ca.pem, cert.pem, key.pem) so that DOCKER_CERT_PATH=Dir works.
type testPKI struct {
	Dir                   string
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	Pool                  *x509.CertPool
}

func newTestPKI(c *check.C) testPKI {
	dir := c.MkDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		c.Assert(os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600), check.IsNil)
		return p
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		c.Assert(err, check.IsNil)
		return k
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wharf test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	c.Assert(err, check.IsNil)
	ca, err := x509.ParseCertificate(caDER)
	c.Assert(err, check.IsNil)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) (certDER, keyDER []byte) {
		k := newKey()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		c.Assert(err, check.IsNil)
		kd, err := x509.MarshalECPrivateKey(k)
		c.Assert(err, check.IsNil)
		return der, kd
	}
	p := testPKI{Dir: dir, Pool: x509.NewCertPool()}
	p.Pool.AddCert(ca)
	p.CA = write("ca.pem", "CERTIFICATE", caDER)
	sc, sk := leaf(2, "wharfd", x509.ExtKeyUsageServerAuth)
	p.ServerCert = write("server-cert.pem", "CERTIFICATE", sc)
	p.ServerKey = write("server-key.pem", "EC PRIVATE KEY", sk)
	cc, ck := leaf(3, "client", x509.ExtKeyUsageClientAuth)
	p.ClientCert = write("cert.pem", "CERTIFICATE", cc)
	p.ClientKey = write("key.pem", "EC PRIVATE KEY", ck)
	return p
}

// freeTCPAddr returns a 127.0.0.1 port free right now (wharfd binds it a
// moment later; another process taking it in between fails the start loudly).
func freeTCPAddr(c *check.C) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, check.IsNil)
	addr := l.Addr().String()
	c.Assert(l.Close(), check.IsNil)
	return addr
}

// execLookPath is exec.LookPath (a variable name-clash-free alias).
var execLookPath = exec.LookPath
