// Package creds finds the registry credentials the wharf CLI sends the
// daemon: the docker config's (credHelpers, then credsStore, then the plain
// auths of config.json, read through internal/dockerconfig), keyed by
// registry as X-Registry-Config carries them, and the one set of a name's
// own registry that X-Registry-Auth carries. It decides which registries a
// name may be found at; the daemon sends each set to its own registry only.
package creds

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/dockerconfig"
)

// DockerHubKey is Docker Hub's key in the docker config and credential helpers.
const DockerHubKey = "https://index.docker.io/v1/"

// Store is the part of the docker config the CLI uses
// (internal/dockerconfig.Config).
type Store interface {
	Get(ctx context.Context, key string) (registry.AuthConfig, bool, error)
	Put(ctx context.Context, key string, ac registry.AuthConfig) error
	Delete(ctx context.Context, key string) error
}

// Finder looks credentials up in the docker config its environment names.
type Finder struct {
	// Getenv reads DOCKER_CONFIG and HOME.
	Getenv func(string) string
	// Debugf logs which stored credentials are used (the -D log).
	Debugf func(format string, args ...any)
}

// Daemon is what SearchConfig asks the daemon: which registries it
// searches a short name in (GET /info's WharfSearchRegistries).
type Daemon interface {
	Info(ctx context.Context) (types.Info, error)
}

// path is $DOCKER_CONFIG/config.json, or ~/.docker/config.json.
func (f *Finder) path() (string, error) {
	return dockerconfig.Path(f.Getenv)
}

// Open opens the docker config's credential store: credHelpers, then
// credsStore, then the plain auths of config.json. Writing plain auths is
// allowed when no helper is configured, as docker login does.
func (f *Finder) Open() (Store, error) {
	p, err := f.path()
	if err != nil {
		return nil, err
	}
	s, err := dockerconfig.Open(p)
	if err != nil {
		return nil, fmt.Errorf("loading docker config %s: %w", p, err)
	}
	return s, nil
}

// ServerKey is the credential-store key of a registry host or login argument:
// Docker Hub's aliases all map to https://index.docker.io/v1/; others are the
// bare host[:port] without scheme or path.
func ServerKey(server string) string {
	if server == "" || server == DockerHubKey {
		return DockerHubKey
	}
	s := strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")
	s, _, _ = strings.Cut(s, "/")
	switch s {
	case "docker.io", "index.docker.io", "registry-1.docker.io":
		return DockerHubKey
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

// RegistryConfig reads the credential store for the registries names are
// on, keyed by registry (X-Registry-Config: the daemon sends each set to
// its own registry only). A helper's failure for one registry goes to
// onErr: nil makes it the command's error (copy), a non-nil onErr that
// returns nil leaves that registry anonymous (the update check, where one
// broken helper must not stop the check of every registry).
func (f *Finder) RegistryConfig(ctx context.Context, names []string, onErr func(key string, err error) error) (map[string]registry.AuthConfig, error) {
	keys := map[string]bool{}
	for _, n := range names {
		if h := registryHost(n); h != "" {
			keys[ServerKey(h)] = true
		}
	}
	var out map[string]registry.AuthConfig
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		ac, err := f.forServer(ctx, k)
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

// SearchConfig is RegistryConfig for the names of a pull, a push, a remote
// inspect or a copy, the one way those send stored credentials. A name in
// search is one the daemon searches (pull, remote inspect, copy's SRC):
// short, it may be found on any registry the daemon searches, so each of
// those gets its own set (asked of d only when a name is short); the other
// names are their own registry's. A helper's failure is the command's error.
func (f *Finder) SearchConfig(ctx context.Context, d Daemon, search, names []string) (map[string]registry.AuthConfig, error) {
	all := append([]string(nil), names...)
	var regs []string
	for _, n := range search {
		if hasRegistryHost(n) {
			all = append(all, n)
			continue
		}
		if regs == nil {
			info, err := d.Info(ctx)
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
	return f.RegistryConfig(ctx, all, nil)
}

// ForName is what a command that reaches name's registry sends: the sets
// of every registry the daemon may find name at (SearchConfig, as
// X-Registry-Config) and the one of name's own registry (OwnSet, as
// X-Registry-Auth).
func (f *Finder) ForName(ctx context.Context, d Daemon, name string) (map[string]registry.AuthConfig, *registry.AuthConfig, error) {
	regs, err := f.SearchConfig(ctx, d, []string{name}, nil)
	if err != nil {
		return nil, nil, err
	}
	return regs, OwnSet(regs, name), nil
}

// OwnSet is the set of regs keyed by the registry name itself names
// (docker.io for a short one), or nil. It goes as X-Registry-Auth beside
// X-Registry-Config, with its server address, for a wharfd that does not
// read X-Registry-Config: that one sends it to its registry only, as
// before. A wharfd that reads both keeps the X-Registry-Config entry.
func OwnSet(regs map[string]registry.AuthConfig, name string) *registry.AuthConfig {
	h := registryHost(name)
	if h == "" {
		return nil
	}
	ac, ok := regs[ServerKey(h)]
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

// forServer looks key up in the credential store.
func (f *Finder) forServer(ctx context.Context, key string) (*registry.AuthConfig, error) {
	store, err := f.Open()
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
	f.Debugf("using stored credentials for %s", key)
	ac.ServerAddress = key
	return &ac, nil
}
