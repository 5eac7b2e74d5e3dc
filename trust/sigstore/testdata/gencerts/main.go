// Command gencerts writes the test PKI that gen.sh signs with: a root, an
// intermediate and a leaf certificate for cosign's public key (the leaf
// carries a subject e-mail and Fulcio's OIDC-issuer extensions), plus an
// unrelated root that nothing chains to. Beside them, two leaves for the
// same key naming the host signer.example.com instead of an e-mail:
// leaf-host.pem for code signing, leaf-tls.pem a TLS server certificate
// (extended key usage serverAuth only) that a pki requirement must refuse.
// Stdlib only; run by gen.sh.
//
//	go run ./testdata/gencerts PUBKEY.pem OUTDIR
package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

const (
	email    = "signer@example.com"
	issuer   = "https://issuer.example.com"
	hostname = "signer.example.com"
)

var (
	oidIssuerV1 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1} // raw string
	oidIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8} // DER UTF8String
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gencerts PUBKEY.pem OUTDIR")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	must(err)
	blk, _ := pem.Decode(raw)
	if blk == nil {
		must(fmt.Errorf("%s: no PEM block", os.Args[1]))
	}
	leafPub, err := x509.ParsePKIXPublicKey(blk.Bytes)
	must(err)
	out := os.Args[2]

	now := time.Now().Truncate(time.Second)
	rootKey, root := ca("wharf test root", nil, nil, now)
	interKey, inter := ca("wharf test intermediate", root, rootKey, now)
	_, other := ca("wharf other root", nil, nil, now)

	v2, err := asn1.Marshal(issuer)
	must(err)
	leafTmpl := &x509.Certificate{
		SerialNumber:   serial(),
		Subject:        pkix.Name{CommonName: "wharf test signer"},
		NotBefore:      now.Add(-time.Hour),
		NotAfter:       now.Add(24 * time.Hour),
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		EmailAddresses: []string{email},
		ExtraExtensions: []pkix.Extension{
			{Id: oidIssuerV1, Value: []byte(issuer)},
			{Id: oidIssuerV2, Value: v2},
		},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, inter, leafPub, interKey)
	must(err)

	write(filepath.Join(out, "leaf.pem"), leafDER)
	for name, eku := range map[string]x509.ExtKeyUsage{"leaf-host.pem": x509.ExtKeyUsageCodeSigning, "leaf-tls.pem": x509.ExtKeyUsageServerAuth} {
		tmpl := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: hostname},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{eku},
			DNSNames:     []string{hostname},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, inter, leafPub, interKey)
		must(err)
		write(filepath.Join(out, name), der)
	}
	write(filepath.Join(out, "intermediate.pem"), inter.Raw)
	write(filepath.Join(out, "root.pem"), root.Raw)
	write(filepath.Join(out, "other-root.pem"), other.Raw)
	// cosign's --certificate-chain: parent intermediate first, root last.
	chain := pemOf(inter.Raw)
	chain = append(chain, pemOf(root.Raw)...)
	must(os.WriteFile(filepath.Join(out, "chain.pem"), chain, 0o644))
}

func ca(cn string, parent *x509.Certificate, parentKey crypto.Signer, now time.Time) (crypto.Signer, *x509.Certificate) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"wharf tests"}},
		NotBefore:             now.Add(-2 * time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	must(err)
	cert, err := x509.ParseCertificate(der)
	must(err)
	return key, cert
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	must(err)
	return n
}

func pemOf(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func write(path string, der []byte) { must(os.WriteFile(path, pemOf(der), 0o644)) }

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencerts:", err)
		os.Exit(1)
	}
}
