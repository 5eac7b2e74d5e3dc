package hosts

import (
	"fmt"
	"slices"
	"strings"
)

// Diff words what differs between two configurations, one line per
// setting, for the reload's log line. Nothing secret is in a config.
func Diff(a, b *Config) []string {
	var out []string
	add := func(what string, x, y []string) {
		if !slices.Equal(x, y) {
			out = append(out, fmt.Sprintf("%s: [%s] → [%s]", what, strings.Join(x, " "), strings.Join(y, " ")))
		}
	}
	add("insecure-registries", a.insecureStrings(), b.insecureStrings())
	add("registry-mirrors", a.Mirrors(), b.Mirrors())
	add("add-registry", a.addRegistries, b.addRegistries)
	add("block-registry", a.blockedStrings(), b.blockedStrings())
	add("certs-dirs", a.certsDirs, b.certsDirs)
	add("hosts.toml", a.hostsStrings(), b.hostsStrings())
	// A change the line above cannot show (a header, a capability, a
	// certificate path) is still a change: name the file, not what is in
	// it (a header value may be a credential).
	for _, index := range sortedKeys(a.hosts) {
		x, y := a.hosts[index], b.hosts[index]
		if y != nil && x.sum != y.sum && slices.Equal(x.hostStrings(), y.hostStrings()) {
			out = append(out, fmt.Sprintf("hosts.toml: %s changed", y.file))
		}
	}
	return out
}

func (c *Config) insecureStrings() []string {
	var out []string
	for _, p := range c.insecureCIDRs {
		out = append(out, p.String())
	}
	return append(out, sortedKeys(c.insecureHosts)...)
}

func (c *Config) blockedStrings() []string {
	out := sortedKeys(c.blocked)
	if c.blockAll {
		out = append([]string{"all"}, out...)
	}
	return out
}

// hostsStrings says, per registry with a hosts.toml, its hosts in order:
// "localhost:5000=http://127.0.0.1:6000/v2,https://localhost:5000/v2".
func (c *Config) hostsStrings() []string {
	var out []string
	for _, index := range sortedKeys(c.hosts) {
		out = append(out, index+"="+strings.Join(c.hosts[index].hostStrings(), ","))
	}
	return out
}

// hostStrings are one registry's API hosts in order, as URLs.
func (rh *registryHosts) hostStrings() []string {
	var hs []string
	for _, m := range rh.mirrors {
		hs = append(hs, m.scheme+"://"+m.host+m.path)
	}
	if rh.server != nil {
		hs = append(hs, rh.server.scheme+"://"+rh.server.host+rh.server.path)
	}
	return hs
}
