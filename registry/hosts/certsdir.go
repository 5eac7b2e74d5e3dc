package hosts

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TLS is host's TLS set-up. fromHostsFile: a hosts.toml's ca, client or
// skip_verify, to be used exactly as written (a clone is the caller's).
// Otherwise, found: a certs dir has a directory for host (conf is new, the
// caller's to change); neither: the host's usual set-up.
func (c *Config) TLS(host string) (conf *tls.Config, fromHostsFile, found bool, err error) {
	if conf, ok := c.tlsByHost[host]; ok {
		return conf, true, true, nil
	}
	conf, found, err = loadCertsDir(c.certsDirs, host)
	return conf, false, found, err
}

// loadCertsDir builds the TLS config of host from the first certs dir that has
// a directory for it: system roots plus every *.crt, and the client.cert /
// client.key pair (both or neither, as in dockerd).
func loadCertsDir(dirs []string, host string) (*tls.Config, bool, error) {
	// A colon is not allowed in Windows paths; dockerd uses the same name on Linux.
	for _, d := range dirs {
		var dir string
		var fis []os.DirEntry
		for _, n := range hostDirNames(host) { // host_port_ (containerd), then host:port (docker)
			dir = filepath.Join(d, n)
			if ents, err := os.ReadDir(dir); err == nil {
				fis = ents
				break
			}
		}
		if fis == nil {
			continue
		}
		conf := &tls.Config{MinVersion: tls.VersionTLS12}
		var certFile, keyFile string
		for _, fi := range fis {
			name := fi.Name()
			p := filepath.Join(dir, name)
			switch {
			case strings.HasSuffix(name, ".crt"):
				pem, err := os.ReadFile(p)
				if err != nil {
					return nil, false, fmt.Errorf("reading CA certificate %s: %w", p, err)
				}
				if conf.RootCAs, err = withCA(conf.RootCAs, pem, p); err != nil {
					return nil, false, err
				}
			case name == "client.cert":
				certFile = p
			case name == "client.key":
				keyFile = p
			}
		}
		if (certFile == "") != (keyFile == "") {
			return nil, false, fmt.Errorf("certs dir %s has only one of client.cert and client.key", dir)
		}
		if certFile != "" {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return nil, false, fmt.Errorf("loading client certificate from %s: %w", dir, err)
			}
			conf.Certificates = []tls.Certificate{pair}
		}
		return conf, true, nil
	}
	return nil, false, nil
}

// withCA adds the certificates in pem (read from name) to pool, which
// starts, when nil, as the system roots: a CA of a certs dir or a
// hosts.toml `ca` is trusted beside the public ones, as in dockerd and
// containerd.
func withCA(pool *x509.CertPool, pem []byte, name string) (*x509.CertPool, error) {
	if pool == nil {
		sys, err := x509.SystemCertPool()
		if err != nil || sys == nil {
			sys = x509.NewCertPool()
		}
		pool = sys
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate found in %s", name)
	}
	return pool, nil
}
