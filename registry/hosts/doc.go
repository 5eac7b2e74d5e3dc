// Package hosts is the registry configuration and nothing else: wharfd's
// registry options (insecure registries and CIDRs, registry-mirrors,
// add-registry, block-registry, certs dirs), the hosts.toml files of the
// certs dirs (containerd's format) and the certificates they and the certs
// dirs name, and the diff a reload logs.
//
// What it hands package registry is, per registry, the list of endpoints
// to try in order (Config.Endpoints, as containerd's RegistryHosts does),
// each host's TLS set-up (Config.TLS) and whether it is secure
// (Config.Secure, Config.SecureLookup). It sends no request and imports no
// wharf package; a Config is never changed once made, so a decision that
// reads one Config reads one configuration.
package hosts
