package hosts

import "net/http"

// Endpoint is one API host of a registry, as the configuration gives it
// (containerd's RegistryHost): registry/ sets it up and speaks to it.
type Endpoint struct {
	Host      string // host[:port] of the API
	PlainHTTP bool   // http://; meaningless when Probe is set
	Mirror    bool
	// Probe: the registry's own API host, configured by no hosts.toml
	// server; its scheme is decided when it is set up (Secure, and for an
	// insecure one the scheme probe of registry/transport/probe.go).
	Probe bool
	// Root is the API root when it is not /v2 (Rooted: a hosts.toml server
	// or mirror with a path, or override_path, whose root may be "", the
	// host's own root).
	Root   string
	Rooted bool
	Caps   Capabilities // what the endpoint is used for; upstreams: all
	Header http.Header  // hosts.toml's header
}

// APIHost is where an index's v2 API lives.
func APIHost(index string) string {
	if NormaliseIndexName(index) == DefaultIndexName {
		return dockerHubAPIHost
	}
	return index
}

// Endpoints are the endpoints of index, in the order reads try them: for
// docker.io the registry-mirrors of daemon.json first; then the mirrors of
// the index's hosts.toml, in file order; the upstream last (the hosts.toml
// server, else the index's own API host, with Probe set).
func (c *Config) Endpoints(index string) []Endpoint {
	var eps []Endpoint
	if index == DefaultIndexName {
		for _, m := range c.mirrors {
			eps = append(eps, Endpoint{Host: m.Host, PlainHTTP: m.Scheme == "http", Mirror: true, Caps: CapPull | CapResolve})
		}
	}
	rh := c.hosts[index]
	if rh != nil {
		for _, m := range rh.mirrors {
			eps = append(eps, hostsEndpoint(m, true))
		}
	}
	if rh != nil && rh.server != nil {
		up := hostsEndpoint(rh.server, false)
		up.Caps = CapAll // the upstream serves everything, push included
		return append(eps, up)
	}
	return append(eps, Endpoint{Host: APIHost(index), Probe: true, Caps: CapAll})
}

// hostsEndpoint is the endpoint of a hosts.toml host: its scheme is the
// one written (no probe), its API root the URL's path.
func hostsEndpoint(d *apiHostDef, mirror bool) Endpoint {
	ep := Endpoint{Host: d.host, PlainHTTP: d.scheme == "http", Mirror: mirror, Caps: d.caps, Header: d.header}
	if d.path != "/v2" {
		ep.Root, ep.Rooted = d.path, true
	}
	return ep
}
