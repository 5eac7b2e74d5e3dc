package hosts

import (
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// registryHosts is what the hosts.toml of one registry says: the mirrors
// to try first, in order, and the upstream (the server).
type registryHosts struct {
	file    string        // the hosts.toml it came from
	sum     [32]byte      // its SHA-256: a reload names a file whose content changed (Diff)
	mirrors []*apiHostDef // [host."…"] entries, in file order
	server  *apiHostDef   // the upstream; nil = https://<host> (docker.io: registry-1.docker.io)
	// serverTLS is the top level's ca/client/skip_verify when server is
	// left to its default: it applies to the default upstream host.
	serverTLS *tls.Config
}

// apiHostDef is one API host of a hosts.toml, ready to use.
type apiHostDef struct {
	scheme string // "https" or "http"
	host   string // host[:port]
	path   string // API root: "/v2", "/prefix/v2", or a path used as-is (override_path)
	caps   Capabilities
	tls    *tls.Config // nil: the host's usual set-up (certs dir, insecure registries)
	header http.Header
}

// maxHostDirs bounds the registry directories read from one certs dir.
const maxHostDirs = 1024

// loadHostsFiles reads <dir>/<host>/hosts.toml of every certs dir: the
// first dir that has a hosts.toml for a registry wins, as the first that
// has a directory wins for certificates. The files are read at start-up and
// at each reload (SIGHUP), so a broken file is reported then, naming it,
// instead of failing the first pull that needs it.
func loadHostsFiles(dirs []string) (map[string]*registryHosts, error) {
	out := map[string]*registryHosts{}
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		// A missing dir, or one this user may not read (a rootless wharfd
		// and root's /etc/docker/certs.d), holds nothing for this daemon,
		// as loadCertsDir skips it for certificates.
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("certs dir %s: %w", d, err)
		}
		if len(ents) > maxHostDirs {
			return nil, fmt.Errorf("certs dir %s: more than %d entries", d, maxHostDirs)
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			name := hostOfDirName(e.Name())
			if name == "_default" {
				continue // containerd's catch-all: not supported (see docs/architecture.md)
			}
			if _, err := ValidateHost(name); err != nil {
				continue // not a registry's directory
			}
			key := NormaliseIndexName(name)
			if _, done := out[key]; done {
				continue
			}
			file := filepath.Join(d, e.Name(), "hosts.toml")
			b, err := readSmallFile(file, maxHostsFile)
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				continue
			}
			if err != nil {
				return nil, err
			}
			rh, err := newRegistryHosts(file, b)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			out[key] = rh
		}
	}
	return out, nil
}

// hostOfDirName undoes hostDirNames: "host_5000_" is host:5000.
func hostOfDirName(n string) string {
	if strings.HasSuffix(n, "_") {
		t := strings.TrimSuffix(n, "_")
		if i := strings.LastIndexByte(t, '_'); i > 0 {
			return t[:i] + ":" + t[i+1:]
		}
	}
	return n
}

func readSmallFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, nil
}

// newRegistryHosts parses one hosts.toml and loads the certificates it names.
func newRegistryHosts(file string, b []byte) (*registryHosts, error) {
	hcs, err := parseHostsFile(filepath.Dir(file), b)
	if err != nil {
		return nil, err
	}
	rh := &registryHosts{file: file, sum: sha256.Sum256(b)}
	for i, hc := range hcs {
		conf, err := hostTLS(hc)
		if err != nil {
			return nil, err
		}
		if i == len(hcs)-1 && hc.host == "" {
			rh.serverTLS = conf
			continue
		}
		def := &apiHostDef{scheme: hc.scheme, host: hc.host, path: hc.path, caps: hc.caps, tls: conf, header: hc.header}
		if i == len(hcs)-1 {
			rh.server = def
		} else {
			rh.mirrors = append(rh.mirrors, def)
		}
	}
	return rh, nil
}

// hostTLS is the TLS config of a host with ca, client or skip_verify; nil
// when it has none (the host keeps its usual set-up).
func hostTLS(hc hostConfig) (*tls.Config, error) {
	if hc.caCerts == nil && hc.clientPairs == nil && hc.skipVerify == nil {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if hc.skipVerify != nil {
		conf.InsecureSkipVerify = *hc.skipVerify //nolint:gosec // asked for in hosts.toml
	}
	for _, f := range hc.caCerts {
		pem, err := readSmallFile(f, maxCertFile)
		if err != nil {
			return nil, fmt.Errorf("ca: %w", err)
		}
		if conf.RootCAs, err = withCA(conf.RootCAs, pem, f); err != nil {
			return nil, fmt.Errorf("ca: %w", err)
		}
	}
	for _, p := range hc.clientPairs {
		certPEM, err := readSmallFile(p[0], maxCertFile)
		if err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		keyPEM := certPEM
		if p[1] != "" {
			if keyPEM, err = readSmallFile(p[1], maxCertFile); err != nil {
				return nil, fmt.Errorf("client: %w", err)
			}
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("client: loading %s: %w", p[0], err)
		}
		conf.Certificates = append(conf.Certificates, pair)
	}
	return conf, nil
}

// maxCertFile caps a certificate or key file named by hosts.toml (1 MiB:
// a bundle of a few hundred CA certificates).
const maxCertFile = 1 << 20
