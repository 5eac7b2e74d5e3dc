package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/internal/dockerconfig"
)

// dockerHubKey is Docker Hub's key in the docker config and credential helpers.
const dockerHubKey = "https://index.docker.io/v1/"

// credentialStore is the part of the docker config the CLI uses
// (internal/dockerconfig.Config).
type credentialStore interface {
	Get(ctx context.Context, key string) (registry.AuthConfig, bool, error)
	Put(ctx context.Context, key string, ac registry.AuthConfig) error
	Delete(ctx context.Context, key string) error
}

// dockerConfigPath is $DOCKER_CONFIG/config.json, or ~/.docker/config.json.
func dockerConfigPath(e env) (string, error) {
	return dockerconfig.Path(e.Getenv)
}

// credentials opens the docker config's credential store: credHelpers, then
// credsStore, then the plain auths of config.json. Writing plain auths is
// allowed when no helper is configured, as docker login does.
func (c *cli) credentials() (credentialStore, error) {
	p, err := dockerConfigPath(c.env)
	if err != nil {
		return nil, err
	}
	s, err := dockerconfig.Open(p)
	if err != nil {
		return nil, fmt.Errorf("loading docker config %s: %w", p, err)
	}
	return s, nil
}

// serverKey is the credential-store key of a registry host or login argument:
// Docker Hub's aliases all map to https://index.docker.io/v1/; others are the
// bare host[:port] without scheme or path.
func serverKey(server string) string {
	if server == "" || server == dockerHubKey {
		return dockerHubKey
	}
	s := strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")
	s, _, _ = strings.Cut(s, "/")
	switch s {
	case "docker.io", "index.docker.io", "registry-1.docker.io":
		return dockerHubKey
	}
	return s
}

// registryHost is the registry part of an image name ("docker.io" for short
// names), or "" when the name does not parse.
func registryHost(name string) string {
	ref, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return ""
	}
	return reference.Domain(ref)
}

// authFor returns the credentials for the registry of image name from the
// credential store, or nil when there are none. A failing credential helper
// is an error: sending no credentials would hide it as "unauthorized".
func (c *cli) authFor(ctx context.Context, name string) (*registry.AuthConfig, error) {
	host := registryHost(name)
	if host == "" {
		// Let the daemon report the bad reference.
		return nil, nil
	}
	return c.authForServer(ctx, serverKey(host))
}

// registryConfig reads the credential store for the registries names are
// on, keyed by registry (X-Registry-Config: the daemon sends each set to
// its own registry only). A helper's failure for one registry goes to
// onErr: nil makes it the command's error (copy), a non-nil onErr that
// returns nil leaves that registry anonymous (the update check, where one
// broken helper must not stop the check of every registry).
func (c *cli) registryConfig(ctx context.Context, names []string, onErr func(key string, err error) error) (map[string]registry.AuthConfig, error) {
	keys := map[string]bool{}
	for _, n := range names {
		if h := registryHost(n); h != "" {
			keys[serverKey(h)] = true
		}
	}
	var out map[string]registry.AuthConfig
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		ac, err := c.authForServer(ctx, k)
		if err != nil {
			if onErr == nil {
				return nil, err
			}
			if err := onErr(k, err); err != nil {
				return nil, err
			}
			continue
		}
		if ac != nil {
			if out == nil {
				out = map[string]registry.AuthConfig{}
			}
			out[k] = *ac
		}
	}
	return out, nil
}

// searchConfig is registryConfig for the names of a pull, a push, a remote
// inspect or a copy, the one way those send stored credentials. A name in
// search is one the daemon searches (pull, remote inspect, copy's SRC):
// short, it may be found on any registry the daemon searches, so each of
// those gets its own set (GET /info's WharfSearchRegistries, asked only
// when a name is short); the other names are their own registry's. A
// helper's failure is the command's error.
func (c *cli) searchConfig(ctx context.Context, api *client.Client, search, names []string) (map[string]registry.AuthConfig, error) {
	all := append([]string(nil), names...)
	var regs []string
	for _, n := range search {
		if hasRegistryHost(n) {
			all = append(all, n)
			continue
		}
		if regs == nil {
			info, err := api.Info(ctx)
			if err != nil {
				return nil, fmt.Errorf("asking the daemon which registries it searches for %s: %w", n, err)
			}
			regs = info.WharfSearchRegistries
			if len(regs) == 0 {
				regs = []string{"docker.io"} // a daemon that does not say searches Docker Hub only
			}
		}
		for _, r := range regs {
			all = append(all, r+"/"+n)
		}
	}
	return c.registryConfig(ctx, all, nil)
}

// ownSet is the set of regs keyed by the registry name itself names
// (docker.io for a short one), or nil. It goes as X-Registry-Auth beside
// X-Registry-Config, with its server address, for a wharfd that does not
// read X-Registry-Config: that one sends it to its registry only, as
// before. A wharfd that reads both keeps the X-Registry-Config entry.
func ownSet(regs map[string]registry.AuthConfig, name string) *registry.AuthConfig {
	h := registryHost(name)
	if h == "" {
		return nil
	}
	ac, ok := regs[serverKey(h)]
	if !ok {
		return nil
	}
	return &ac
}

// hasRegistryHost reports whether name, as typed, names its registry: its
// first path component looks like a host (has a '.' or ':', is localhost,
// or is not lower case), distribution/reference's rule and the daemon's.
// A name that does not is short: the daemon searches it.
func hasRegistryHost(name string) bool {
	first, _, ok := strings.Cut(name, "/")
	if !ok {
		return false
	}
	return strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first
}

// authForServer looks key up in the credential store.
func (c *cli) authForServer(ctx context.Context, key string) (*registry.AuthConfig, error) {
	store, err := c.credentials()
	if err != nil {
		return nil, err
	}
	ac, found, err := store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("error getting credentials for %s: %w", key, err)
	}
	if !found {
		return nil, nil
	}
	c.log.Debugf("using stored credentials for %s", key)
	ac.ServerAddress = key
	return &ac, nil
}
