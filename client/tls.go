package client

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
)

// TLS environment, as docker's DOCKER_TLS_VERIFY and DOCKER_CERT_PATH.
const (
	// TLSVerifyEnv, when non-empty, turns on --tlsverify.
	TLSVerifyEnv = "WHARF_TLS_VERIFY"
	// CertPathEnv names the directory of ca.pem, cert.pem and key.pem.
	CertPathEnv = "WHARF_CERT_PATH"
)

// TLSFiles are the client side of the daemon's --tlsverify: the CA that
// signed the daemon's certificate, and the client's own certificate and key.
type TLSFiles struct {
	CACert, Cert, Key string
}

// DefaultTLSFiles are ca.pem, cert.pem and key.pem in $WHARF_CERT_PATH,
// else $DOCKER_CERT_PATH, else ~/.docker (the docker CLI's place, so one set
// of certificates serves both CLIs).
func DefaultTLSFiles(env Environment) TLSFiles {
	dir := env.Getenv(CertPathEnv)
	if dir == "" {
		dir = env.Getenv("DOCKER_CERT_PATH")
	}
	if dir == "" {
		dir = filepath.Join(env.Getenv("HOME"), ".docker")
	}
	return TLSFiles{CACert: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "cert.pem"), Key: filepath.Join(dir, "key.pem")}
}

// maxPEM caps each file read (1 MiB).
const maxPEM = 1 << 20

// Config loads the files: the daemon must present a certificate signed by
// CACert for the host it is dialled as; the client presents Cert/Key.
func (f TLSFiles) Config() (*tls.Config, error) {
	read := func(p string) ([]byte, error) {
		fh, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("TLS: %w", err)
		}
		defer fh.Close()
		b, err := io.ReadAll(io.LimitReader(fh, maxPEM+1))
		if err != nil {
			return nil, fmt.Errorf("TLS: reading %s: %w", p, err)
		}
		if len(b) > maxPEM {
			return nil, fmt.Errorf("TLS: %s is larger than %d bytes", p, maxPEM)
		}
		return b, nil
	}
	ca, err := read(f.CACert)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("TLS: %s holds no PEM certificate", f.CACert)
	}
	cert, err := read(f.Cert)
	if err != nil {
		return nil, err
	}
	key, err := read(f.Key)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("TLS: loading %s and %s: %w", f.Cert, f.Key, err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// WithTLS makes a tcp:// client speak HTTPS with cfg (see TLSFiles.Config).
// It has no effect on unix sockets.
func WithTLS(cfg *tls.Config) Option {
	return func(c *Client) {
		if proto, _, err := ParseHost(c.host); err != nil || proto == "unix" {
			return
		}
		c.scheme = "https"
		if t, ok := c.http.Transport.(*http.Transport); ok {
			t.TLSClientConfig = cfg
		}
	}
}
