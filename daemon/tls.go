package daemon

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"

	"github.com/docker/go-connections/tlsconfig"
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
// hundred certificates is well under it. tlsconfig reads whole files, so
// checkPEMSizes refuses a larger one before it is read.
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
// verifies client certificates (TLS 1.2 or later), with
// github.com/docker/go-connections/tlsconfig as dockerd does for the same
// flags: the CA file is the only root (ExclusiveRootPools), not added to
// the system's. The cipher suites stay Go's defaults, as they were before
// tlsconfig (its narrower TLS 1.2 list would be a change of its own).
func (o TLSOptions) serverConfig() (*tls.Config, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := checkPEMSizes(o.CACert, o.Cert, o.Key); err != nil {
		return nil, err
	}
	cfg, err := tlsconfig.Server(tlsconfig.Options{
		CAFile:             o.CACert,
		CertFile:           o.Cert,
		KeyFile:            o.Key,
		ClientAuth:         tls.RequireAndVerifyClientCert,
		ExclusiveRootPools: true,
		MinVersion:         tls.VersionTLS12,
	})
	if err != nil {
		return nil, fmt.Errorf("--tlscacert, --tlscert, --tlskey: %w", err)
	}
	cfg.CipherSuites = nil
	return cfg, nil
}

// checkPEMSizes refuses a file larger than maxPEMFile (a missing one is
// left to tlsconfig, which names it).
func checkPEMSizes(paths ...string) error {
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Size() > maxPEMFile {
			return fmt.Errorf("%s: larger than %d bytes", p, maxPEMFile)
		}
	}
	return nil
}
