package hosts

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"
	tomlu "github.com/pelletier/go-toml/v2/unstable"
)

// hosts.toml, in containerd's format (containerd's
// core/remotes/docker/config/hosts.go is the reference; the differences
// are listed in docs/architecture.md):
//
//	server = "https://registry.example.com"   # the upstream; default https://<host>
//	                                          # (docker.io: registry-1.docker.io)
//	[host."https://mirror.example.com"]       # tried first, in file order
//	  capabilities = ["pull", "resolve"]      # default: all
//	  ca = "mirror-ca.crt"                    # or a list; relative to the file's directory
//	  client = [["client.cert", "client.key"]] # or "both.pem", or a list of them
//	  skip_verify = false
//	  override_path = false                   # true: the URL path is the API root as-is
//	  [host."https://mirror.example.com".header]
//	    x-custom = "value"

// Capabilities are what a host may be used for.
type Capabilities uint8

const (
	CapPull      Capabilities = 1 << iota // blobs and manifests by digest
	CapResolve                            // a tag (or digest) to a descriptor
	CapPush                               // accepted for compatibility; push goes upstream only
	CapReferrers                          // accepted for compatibility
	CapAll       = CapPull | CapResolve | CapPush | CapReferrers
)

// maxHostsFile caps a hosts.toml (64 KiB): a hand-written list of a few hosts.
const maxHostsFile = 64 << 10

// hostConfig is one host of a hosts.toml: a mirror ([host."…"]) or the
// server (the last one).
type hostConfig struct {
	scheme string // "https" or "http"
	host   string // host[:port], lower case; "" for a server left to its default
	path   string // API root, "/v2" unless the URL has a path

	caps        Capabilities
	caCerts     []string    // absolute paths
	clientPairs [][2]string // certificate, key ("" when the key is in the certificate's file)
	skipVerify  *bool
	header      http.Header
}

// hostFileSection is one table of hosts.toml (the top level or a [host."…"]).
type hostFileSection struct {
	Capabilities []string       `toml:"capabilities"`
	CACert       any            `toml:"ca"`
	Client       any            `toml:"client"`
	SkipVerify   *bool          `toml:"skip_verify"`
	Header       map[string]any `toml:"header"`
	OverridePath bool           `toml:"override_path"`
	DialTimeout  string         `toml:"dial_timeout"` // accepted and ignored: wharfd's dial timeout applies
}

// parseHostsFile parses a hosts.toml read from baseDir (relative certificate
// paths are relative to it): the [host."…"] tables in file order, then the
// server. Every error names what is wrong; nothing outside input panics.
func parseHostsFile(baseDir string, b []byte) ([]hostConfig, error) {
	if len(b) > maxHostsFile {
		return nil, fmt.Errorf("larger than %d bytes", maxHostsFile)
	}
	order, err := hostsInOrder(b)
	if err != nil {
		return nil, fmt.Errorf("invalid TOML: %w", err)
	}
	var c struct {
		hostFileSection
		Server string                     `toml:"server"`
		Hosts  map[string]hostFileSection `toml:"host"`
	}
	if err := toml.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("invalid TOML: %w", err)
	}
	var out []hostConfig
	for _, h := range order {
		sec, ok := c.Hosts[h]
		if !ok {
			continue
		}
		hc, err := parseHostSection(h, baseDir, sec)
		if err != nil {
			return nil, fmt.Errorf("host %q: %w", RedactAddress(h), err)
		}
		if hc.host == "" {
			return nil, fmt.Errorf("host %q: no host name", RedactAddress(h))
		}
		out = append(out, hc)
	}
	server, err := parseHostSection(c.Server, baseDir, c.hostFileSection)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", RedactAddress(c.Server), err)
	}
	return append(out, server), nil
}

// hostsInOrder lists the [host."…"] tables in the order of the file (a Go
// map forgets it), skipping their sub-tables ([host."…".header]), as
// containerd's getSortedHosts does.
func hostsInOrder(b []byte) ([]string, error) {
	var p tomlu.Parser
	p.Reset(b)
	var out []string
	seen := map[string]bool{}
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind != tomlu.Table {
			continue
		}
		var parts []string
		for it := e.Key(); it.Next(); {
			parts = append(parts, string(it.Node().Data))
		}
		if len(parts) < 2 || parts[0] != "host" || seen[parts[1]] {
			continue
		}
		seen[parts[1]] = true
		out = append(out, parts[1])
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	return out, nil
}

func parseHostSection(server, baseDir string, sec hostFileSection) (hostConfig, error) {
	var hc hostConfig
	if server != "" {
		if !strings.Contains(server, "://") {
			server = "https://" + server
		}
		u, err := url.Parse(server)
		if err != nil {
			return hc, fmt.Errorf("not a URL")
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return hc, fmt.Errorf("unsupported scheme %q (want http or https)", u.Scheme)
		}
		if u.User != nil {
			return hc, fmt.Errorf("username/password not allowed in the URL")
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return hc, fmt.Errorf("query or fragment not allowed in the URL")
		}
		h, err := ValidateHost(u.Host)
		if err != nil {
			return hc, err
		}
		hc.scheme, hc.host = u.Scheme, h
		// The API root: <path>/v2, or the path as written with override_path.
		p := "/v2"
		if u.Path != "" && u.Path != "/" {
			p = path.Clean(u.Path)
			if !strings.HasSuffix(p, "/v2") && !sec.OverridePath {
				p += "/v2"
			}
		} else if sec.OverridePath {
			p = ""
		}
		hc.path = p
	}
	hc.skipVerify = sec.SkipVerify
	if len(sec.Capabilities) == 0 {
		hc.caps = CapAll
	}
	for _, c := range sec.Capabilities {
		switch strings.ToLower(c) {
		case "pull":
			hc.caps |= CapPull
		case "resolve":
			hc.caps |= CapResolve
		case "push":
			hc.caps |= CapPush
		case "referrers":
			hc.caps |= CapReferrers
		default:
			return hc, fmt.Errorf("unknown capability %q", c)
		}
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(baseDir, p)
	}
	var err error
	switch v := sec.CACert.(type) {
	case nil:
	case string:
		hc.caCerts = []string{abs(v)}
	case []any:
		if hc.caCerts, err = stringList(v, abs); err != nil {
			return hc, fmt.Errorf("ca: %w", err)
		}
	default:
		return hc, fmt.Errorf("ca: want a path or a list of paths")
	}
	switch v := sec.Client.(type) {
	case nil:
	case string:
		hc.clientPairs = [][2]string{{abs(v), ""}}
	case []any:
		for _, item := range v {
			switch p := item.(type) {
			case string:
				hc.clientPairs = append(hc.clientPairs, [2]string{abs(p), ""})
			case []any:
				pair, err := stringList(p, abs)
				if err != nil || len(pair) != 2 {
					return hc, fmt.Errorf("client: want [certificate, key] pairs")
				}
				if p1, _ := p[1].(string); p1 == "" {
					pair[1] = ""
				}
				hc.clientPairs = append(hc.clientPairs, [2]string{pair[0], pair[1]})
			default:
				return hc, fmt.Errorf("client: want a path, a list of paths or [certificate, key] pairs")
			}
		}
	default:
		return hc, fmt.Errorf("client: want a path, a list of paths or [certificate, key] pairs")
	}
	if len(sec.Header) > 0 {
		hc.header = http.Header{}
		for k, v := range sec.Header {
			var vals []string
			switch v := v.(type) {
			case string:
				vals = []string{v}
			case []any:
				var err error
				if vals, err = stringList(v, nil); err != nil {
					return hc, fmt.Errorf("header %q: %w", k, err)
				}
			default:
				return hc, fmt.Errorf("header %q: want a string or a list of strings", k)
			}
			if err := checkHeader(k, vals); err != nil {
				return hc, err
			}
			hc.header[http.CanonicalHeaderKey(k)] = vals
		}
	}
	return hc, nil
}

func stringList(v []any, mapFn func(string) string) ([]string, error) {
	out := make([]string, 0, len(v))
	for _, x := range v {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("want strings, got %T", x)
		}
		if mapFn != nil {
			s = mapFn(s)
		}
		out = append(out, s)
	}
	return out, nil
}

// hostDirNames are the directory names of host[:port] under a certs.d, in
// containerd's order of preference: "host_port_" (a colon is not allowed in
// every file system), then "host:port" as docker writes it.
func hostDirNames(hostport string) []string {
	if i := strings.LastIndexByte(hostport, ':'); i > 0 && !strings.HasSuffix(hostport, "]") {
		return []string{hostport[:i] + "_" + hostport[i+1:] + "_", hostport}
	}
	return []string{hostport}
}
