package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
)

// TLSOptions are the API's TLS settings for tcp:// listeners, as dockerd's
// --tlsverify --tlscacert --tlscert --tlskey: the server presents cert/key
// and requires every client to present a certificate signed by CACert.
// There is no TLS-without-client-verification mode: a tcp:// listener that
// anyone can use needs --allow-insecure-tcp, said out loud.
type TLSOptions struct {
	Verify bool
	CACert string
	Cert   string
	Key    string
}

// maxPEMFile caps a certificate or key file (1 MiB): a CA bundle of a few
// hundred certificates is well under it.
const maxPEMFile = 1 << 20

// validate checks that a verifying TLS setup names all three files.
func (o TLSOptions) validate() error {
	if !o.Verify {
		if o.CACert != "" || o.Cert != "" || o.Key != "" {
			return errors.New("--tlscacert, --tlscert and --tlskey need --tlsverify (wharfd has no TLS mode without client certificates)")
		}
		return nil
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"tlscacert", o.CACert}, {"tlscert", o.Cert}, {"tlskey", o.Key}} {
		if f.v == "" {
			missing = append(missing, "--"+f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--tlsverify needs %v", missing)
	}
	return nil
}

// serverConfig loads the files into a tls.Config that requires and
// verifies client certificates (TLS 1.2 or later).
func (o TLSOptions) serverConfig() (*tls.Config, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	certPEM, err := readPEM(o.Cert)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readPEM(o.Key)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading --tlscert %s and --tlskey %s: %w", o.Cert, o.Key, err)
	}
	caPEM, err := readPEM(o.CACert)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("--tlscacert %s: no PEM certificate in it", o.CACert)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

func readPEM(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPEMFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > maxPEMFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxPEMFile)
	}
	return b, nil
}
