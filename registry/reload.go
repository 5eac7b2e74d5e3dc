package registry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
)

// Reload replaces the registry configuration — insecure registries,
// mirrors, add- and block-registry, certs dirs and the hosts.toml files in
// them, re-read now — and says what changed. opts' Transport, Timeout,
// UserAgent and Logger are those of NewService and are ignored here.
// Invalid options are an error and change nothing. Requests already
// running finish on the old configuration's endpoints; the idle
// connections of the old per-host set-ups are closed, so a changed
// certificate is used from the next connection on.
func (s *Service) Reload(opts ServiceOptions) ([]string, error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
	}
	old := s.state.Load()
	changes := diffConfig(old.cfg, cfg)
	tr := newHostTransports(cfg, s.tm, s.opts.Transport)
	tr.obs = s.obs
	s.state.Store(&serviceState{cfg: cfg, transports: tr})
	old.transports.closeIdle()
	return changes, nil
}

// diffConfig words what differs between two configurations, one line per
// setting, for the reload's log line. Nothing secret is in a config.
func diffConfig(a, b *config) []string {
	var out []string
	add := func(what string, x, y []string) {
		if !slices.Equal(x, y) {
			out = append(out, fmt.Sprintf("%s: [%s] → [%s]", what, strings.Join(x, " "), strings.Join(y, " ")))
		}
	}
	add("insecure-registries", a.insecureStrings(), b.insecureStrings())
	add("registry-mirrors", a.mirrorStrings(), b.mirrorStrings())
	add("add-registry", a.addRegistries, b.addRegistries)
	add("block-registry", a.blockedStrings(), b.blockedStrings())
	add("certs-dirs", a.certsDirs, b.certsDirs)
	add("hosts.toml", a.hostsStrings(), b.hostsStrings())
	return out
}

func (c *config) insecureStrings() []string {
	var out []string
	for _, p := range c.insecureCIDRs {
		out = append(out, p.String())
	}
	return append(out, sortedKeys(c.insecureHosts)...)
}

func (c *config) blockedStrings() []string {
	out := sortedKeys(c.blocked)
	if c.blockAll {
		out = append([]string{"all"}, out...)
	}
	return out
}

// hostsStrings says, per registry with a hosts.toml, its hosts in order:
// "localhost:5000=http://127.0.0.1:6000/v2,https://localhost:5000/v2".
func (c *config) hostsStrings() []string {
	var out []string
	for _, index := range sortedKeys(c.hosts) {
		rh := c.hosts[index]
		var hs []string
		for _, m := range rh.mirrors {
			hs = append(hs, m.scheme+"://"+m.host+m.path)
		}
		if rh.server != nil {
			hs = append(hs, rh.server.scheme+"://"+rh.server.host+rh.server.path)
		}
		out = append(out, index+"="+strings.Join(hs, ","))
	}
	return out
}
