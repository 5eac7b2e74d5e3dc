package client

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/docker/go-connections/tlsconfig"
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

// maxPEM caps each file (1 MiB). tlsconfig reads whole files, so a larger
// one is refused before it is read.
const maxPEM = 1 << 20

// Config loads the files with github.com/docker/go-connections/tlsconfig,
// as the docker CLI does for the same flags: the daemon must present a
// certificate signed by CACert (the only root: ExclusiveRootPools) for the
// host it is dialled as; the client presents Cert/Key; TLS 1.2 or later.
// The cipher suites stay Go's defaults, as they were before tlsconfig.
func (f TLSFiles) Config() (*tls.Config, error) {
	for _, p := range []string{f.CACert, f.Cert, f.Key} {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("TLS: %w", err)
		}
		if fi.Size() > maxPEM {
			return nil, fmt.Errorf("TLS: %s is larger than %d bytes", p, maxPEM)
		}
	}
	cfg, err := tlsconfig.Client(tlsconfig.Options{
		CAFile:             f.CACert,
		CertFile:           f.Cert,
		KeyFile:            f.Key,
		ExclusiveRootPools: true,
		MinVersion:         tls.VersionTLS12,
	})
	if err != nil {
		return nil, fmt.Errorf("TLS: %w", err)
	}
	cfg.CipherSuites = nil
	return cfg, nil
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
