package main

import (
	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/client"
)

// tlsFlags are docker's --tlsverify --tlscacert --tlscert --tlskey: talk to
// a wharfd listening on tcp:// with --tlsverify.
type tlsFlags struct {
	verify            bool
	caCert, cert, key string
}

func (f *tlsFlags) install(root *cobra.Command) {
	fl := root.Flags()
	fl.BoolVar(&f.verify, "tlsverify", false, "Use TLS and verify the daemon (default $"+client.TLSVerifyEnv+" non-empty)")
	fl.StringVar(&f.caCert, "tlscacert", "", "Trust certs signed only by this CA (default $"+client.CertPathEnv+"/ca.pem, $DOCKER_CERT_PATH/ca.pem, ~/.docker/ca.pem)")
	fl.StringVar(&f.cert, "tlscert", "", "Path to TLS certificate file (default cert.pem beside ca.pem)")
	fl.StringVar(&f.key, "tlskey", "", "Path to TLS key file (default key.pem beside ca.pem)")
}

// tlsOption returns the client option for TLS, or nil when TLS is off.
// Naming a file turns TLS on, as in the docker CLI.
func (c *cli) tlsOption() (client.Option, error) {
	f := c.tls
	on := f.verify || c.env.Getenv(client.TLSVerifyEnv) != "" || f.caCert != "" || f.cert != "" || f.key != ""
	if !on {
		return nil, nil
	}
	files := client.DefaultTLSFiles(client.Environment{Getenv: c.env.Getenv, Geteuid: c.env.Geteuid})
	if f.caCert != "" {
		files.CACert = f.caCert
	}
	if f.cert != "" {
		files.Cert = f.cert
	}
	if f.key != "" {
		files.Key = f.key
	}
	cfg, err := files.Config()
	if err != nil {
		return nil, err
	}
	c.log.Debugf("TLS: CA %s, certificate %s", files.CACert, files.Cert)
	return client.WithTLS(cfg), nil
}
