package hosts

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/distribution/reference"
)

// Host names of Docker Hub. Users type docker.io; credentials stored by old
// clients say https://index.docker.io/v1/; the v2 API lives on registry-1.
const (
	// DefaultIndexName is the index that short names resolve to.
	DefaultIndexName = "docker.io"
	dockerHubAPIHost = "registry-1.docker.io"
	// IndexServerAddress is what docker login stores for Docker Hub.
	IndexServerAddress = "https://index.docker.io/v1/"
)

// Options are the registry settings of daemon.json and wharfd's flags;
// zero values are the defaults. registry.ServiceOptions documents each.
type Options struct {
	InsecureRegistries []string
	Mirrors            []string
	AddRegistries      []string
	BlockRegistries    []string
	CertsDirs          []string
}

// DefaultCertsDirs are searched, in order, for <host[:port]>/{*.crt,client.cert,client.key}.
var defaultCertsDirs = []string{"/etc/wharf/certs.d", "/etc/docker/certs.d"}

// loopbackCIDRs are always insecure, as in dockerd (a registry on the same
// machine is usually a test or a cache, and plain HTTP to it leaves no host).
// The order is Docker 28's /info order.
var loopbackCIDRs = []netip.Prefix{
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("127.0.0.0/8"),
}

// anchoredDomain matches a whole host[:port] the way reference does.
var anchoredDomain = regexp.MustCompile(`^` + reference.DomainRegexp.String() + `$`)

// Config is Options validated and normalised, with the hosts.toml files
// of its certs dirs read. It is never changed once made: a reload makes a
// new one, so a decision that reads one Config reads one configuration.
type Config struct {
	insecureHosts map[string]bool // host[:port], lower case
	insecureCIDRs []netip.Prefix  // loopback first, then the configured ones
	userCIDRs     bool            // CIDRs beyond loopback were configured (host names need a DNS look-up)
	mirrors       []*url.URL      // docker.io mirrors, in order
	addRegistries []string        // searched before docker.io for short names
	blockAll      bool
	blocked       map[string]bool
	certsDirs     []string
	// hosts are the registries with a hosts.toml in a certs dir
	// (hostsdir.go), by index name; tlsByHost the TLS set-up hosts.toml
	// gives an API host (ca, client, skip_verify), first file first.
	hosts     map[string]*registryHosts
	tlsByHost map[string]*tls.Config
	// lookup resolves a host name (net.DefaultResolver; tests replace it).
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// New validates opts and reads the hosts.toml files of its certs dirs;
// every error names the bad value.
func New(opts Options) (*Config, error) {
	c := &Config{
		insecureHosts: map[string]bool{},
		insecureCIDRs: append([]netip.Prefix(nil), loopbackCIDRs...),
		blocked:       map[string]bool{},
		certsDirs:     opts.CertsDirs,
		lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
	}
	if len(c.certsDirs) == 0 {
		c.certsDirs = defaultCertsDirs
	}
	hosts, err := loadHostsFiles(c.certsDirs)
	if err != nil {
		return nil, err
	}
	c.hosts, c.tlsByHost = hosts, map[string]*tls.Config{}
	for _, index := range sortedKeys(hosts) {
		rh := hosts[index]
		defs := append([]*apiHostDef(nil), rh.mirrors...)
		if rh.server != nil {
			defs = append(defs, rh.server)
		} else if rh.serverTLS != nil {
			defs = append(defs, &apiHostDef{host: APIHost(index), tls: rh.serverTLS})
		}
		for _, d := range defs {
			if _, ok := c.tlsByHost[d.host]; !ok && d.tls != nil {
				c.tlsByHost[d.host] = d.tls
			}
		}
	}
	for _, v := range opts.InsecureRegistries {
		v = strings.TrimSpace(v)
		if strings.Contains(v, "://") {
			return nil, fmt.Errorf("insecure registry %q should not contain '://'", RedactAddress(v))
		}
		if strings.Contains(v, "/") {
			p, err := netip.ParsePrefix(v)
			if err != nil {
				return nil, fmt.Errorf("insecure registry %q is not a valid CIDR", RedactAddress(v))
			}
			p = p.Masked()
			if !containsPrefix(c.insecureCIDRs, p) {
				c.insecureCIDRs = append(c.insecureCIDRs, p)
				c.userCIDRs = true
			}
			continue
		}
		h, err := ValidateHost(v)
		if err != nil {
			return nil, fmt.Errorf("insecure registry: %w", err)
		}
		c.insecureHosts[h] = true
	}
	for _, v := range opts.Mirrors {
		u, err := validateMirror(v)
		if err != nil {
			return nil, err
		}
		c.mirrors = append(c.mirrors, u)
	}
	for _, v := range opts.AddRegistries {
		h, err := ValidateHost(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("additional registry: %w", err)
		}
		c.addRegistries = append(c.addRegistries, NormaliseIndexName(h))
	}
	for _, v := range opts.BlockRegistries {
		v = strings.TrimSpace(v)
		if v == "all" {
			c.blockAll = true
			continue
		}
		h, err := ValidateHost(v)
		if err != nil {
			return nil, fmt.Errorf("blocked registry: %w", err)
		}
		c.blocked[NormaliseIndexName(h)] = true
	}
	return c, nil
}

func containsPrefix(ps []netip.Prefix, p netip.Prefix) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// ValidateHost checks host[:port] and returns it lower-cased. Its errors
// repeat h without any user:password@ in it.
func ValidateHost(h string) (string, error) {
	if h == "" {
		return "", fmt.Errorf("empty registry host")
	}
	if strings.Contains(h, "://") {
		return "", fmt.Errorf("registry %q should not contain '://'", RedactAddress(h))
	}
	if !anchoredDomain.MatchString(h) {
		return "", fmt.Errorf("registry %q is not a valid host[:port]", RedactAddress(h))
	}
	return strings.ToLower(h), nil
}

// RedactAddress replaces the credentials of a server address, the user
// or user:password before an "@" in its authority ("http://u:p@host/v2/",
// "u:p@host:5000"), with "xxxxx", so that an error or a log line may
// repeat the address. url.URL.Redacted keeps the user name, and some
// clients put a token there.
func RedactAddress(s string) string {
	scheme, rest := "", s
	if i := strings.Index(s, "://"); i >= 0 {
		scheme, rest = s[:i+3], s[i+3:]
	}
	authority := rest
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		authority = rest[:j]
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		return scheme + "xxxxx@" + rest[at+1:]
	}
	return s
}

// HasUserinfo reports whether a server address carries credentials.
func HasUserinfo(s string) bool { return RedactAddress(s) != s }

// validateMirror accepts http(s)://host[:port][/] only: oras-go builds every
// URL as scheme://host/v2/..., so a mirror under a path prefix cannot work.
func validateMirror(v string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(v))
	v = RedactAddress(v) // for the messages below
	if err != nil {
		return nil, fmt.Errorf("invalid mirror %q: not a URL", v)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("invalid mirror %q: unsupported scheme %q (want http or https)", v, u.Scheme)
	}
	if u.User != nil {
		return nil, fmt.Errorf("invalid mirror %q: username/password not allowed in URI", v)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("invalid mirror %q: query or fragment at end of the URI", v)
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("invalid mirror %q: a path is not supported", v)
	}
	if _, err := ValidateHost(u.Host); err != nil {
		return nil, fmt.Errorf("invalid mirror %q: %w", v, err)
	}
	return &url.URL{Scheme: u.Scheme, Host: strings.ToLower(u.Host), Path: "/"}, nil
}

// NormaliseIndexName maps Docker Hub's aliases to docker.io.
func NormaliseIndexName(h string) string {
	h = strings.ToLower(h)
	switch h {
	case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return DefaultIndexName
	}
	return h
}

// NormaliseServerAddress turns a credential's ServerAddress
// ("https://index.docker.io/v1/", "localhost:5000", "http://r:5000/v2/")
// into the index name it belongs to.
func NormaliseServerAddress(addr string) string {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return ""
	}
	if i := strings.Index(addr, "://"); i >= 0 {
		addr = addr[i+3:]
	}
	if i := strings.IndexByte(addr, '/'); i >= 0 {
		addr = addr[:i]
	}
	return NormaliseIndexName(addr)
}

// IsLoopbackHost reports whether host[:port] names this machine; such
// registries are always insecure (see Secure and registry/transport/probe.go).
func IsLoopbackHost(hostport string) bool {
	h := HostOnly(hostport)
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback()
}

// HostOnly is the host of host[:port], without brackets.
func HostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// Secure reports, without a DNS query, whether host[:port] must be spoken
// to over verified TLS. A host name that only an insecure CIDR could make
// insecure reads as secure here; secureLookup decides those, and the
// transport of every request uses secureLookup's answer.
func (c *Config) Secure(hostport string) bool {
	s, _ := c.staticSecure(hostport)
	return s
}

// staticSecure is the decision that needs no DNS: like dockerd, listed
// hosts and hosts whose IP is in an insecure CIDR are insecure; localhost
// is loopback. decided is false only for a host name when CIDRs beyond
// loopback were configured (so the default costs no DNS query).
func (c *Config) staticSecure(hostport string) (secure, decided bool) {
	hostport = strings.ToLower(hostport)
	if c.insecureHosts[hostport] || c.insecureHosts[HostOnly(hostport)] {
		return false, true
	}
	if IsLoopbackHost(hostport) {
		return false, true
	}
	if a, err := netip.ParseAddr(HostOnly(hostport)); err == nil {
		return !c.inInsecureCIDR(a), true
	}
	if !c.userCIDRs || NormaliseIndexName(hostport) == DefaultIndexName {
		return true, true
	}
	return true, false
}

// SecureLookup is staticSecure completed with a DNS look-up under ctx: a
// host name is insecure when one of its addresses is in an insecure CIDR.
// A failed look-up reads as secure (verified TLS cannot leak anything) and
// is returned as err, so that the caller does not remember the answer.
func (c *Config) SecureLookup(ctx context.Context, hostport string) (bool, error) {
	if s, ok := c.staticSecure(hostport); ok {
		return s, nil
	}
	addrs, err := c.lookup(ctx, HostOnly(hostport))
	if err != nil {
		return true, err
	}
	for _, a := range addrs {
		if c.inInsecureCIDR(a) {
			return false, nil
		}
	}
	return true, nil
}

func (c *Config) inInsecureCIDR(a netip.Addr) bool {
	for _, p := range c.insecureCIDRs {
		if p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// Blocked reports whether index name h is refused.
func (c *Config) Blocked(h string) bool {
	h = NormaliseIndexName(h)
	if c.blocked[h] {
		return true
	}
	if c.blockAll {
		for _, a := range c.addRegistries {
			if a == h {
				return false
			}
		}
		return true
	}
	return false
}

// Mirrors are docker.io's registry-mirrors, as /info shows them.
func (c *Config) Mirrors() []string {
	out := make([]string, 0, len(c.mirrors))
	for _, m := range c.mirrors {
		out = append(out, m.String())
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// AddRegistries are searched, in order, before docker.io for short names.
func (c *Config) AddRegistries() []string { return c.addRegistries }

// InsecureCIDRs are the insecure networks, loopback first (as /info shows them).
func (c *Config) InsecureCIDRs() []netip.Prefix { return c.insecureCIDRs }

// InsecureHosts are the hosts[:port] configured insecure, sorted.
func (c *Config) InsecureHosts() []string { return sortedKeys(c.insecureHosts) }

// SetLookup replaces the DNS look-up that insecure CIDRs need (tests).
func (c *Config) SetLookup(fn func(ctx context.Context, host string) ([]netip.Addr, error)) {
	c.lookup = fn
}
