package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/wharfproject/wharf/registry/hosts"
	"github.com/wharfproject/wharf/registry/transport"
)

// Which credentials go to which host is decided here and nowhere else.
//
//   - bound is the entry: it takes either form of Credentials — one set, or
//     sets keyed by registry — and returns one set bound to index (its
//     ServerAddress names index), or one already bound elsewhere, or none.
//     A search binds one set to its first candidate (sets keyed by registry
//     stay keyed: each candidate picks its own); a repository binds to its
//     index. What is read after a search reads through the repository it
//     bound (RemoteImage.Repository), never binds again.
//   - For says whether a bound set goes to a registry: only to the one its
//     ServerAddress names.
//   - sendOnlyTo hands a set to a transport.Client for the requests to one
//     API host.
//
// The upstream of an index gets the index's set (also when hosts.toml's
// server names another host: the user chose it as the index's registry); a
// mirror gets only a set stored for the mirror itself (docs/security.md).

// bound returns c holding at most one set, bound to a registry: from a
// per-registry map the set keyed by index (its ServerAddress becomes its
// key); a single set without a ServerAddress is bound to index; a single
// set bound elsewhere is kept (For keeps it from index).
func (c Credentials) bound(index string) Credentials {
	if c.Registries != nil {
		c.Auth, c.Registries = pick(c.Registries, index), nil
		return c
	}
	if c.Auth != nil && c.Auth.ServerAddress == "" {
		ac := *c.Auth
		ac.ServerAddress = hosts.NormaliseIndexName(index)
		c.Auth = &ac
	}
	return c
}

// BoundTo is bound for a caller that decides the registry of its request
// itself (a local image's origin, graph/attestations.go): it binds once,
// before any registry is asked, so that a set without a ServerAddress
// cannot follow the request to whichever registry is tried next. FindImage
// and Repository bind on their own.
func (c Credentials) BoundTo(registry string) Credentials {
	return c.bound(hosts.NormaliseIndexName(registry))
}

// For is the set registry (an index name or an API host) receives from
// bound credentials, or nil. Unbound (the caller bound nothing), a single
// set belongs to whatever registry asks, as its header came with a request
// for that registry's image.
func (c Credentials) For(registry string) *registrytypes.AuthConfig {
	if c.Registries != nil {
		return pick(c.Registries, registry)
	}
	ac := c.Auth
	if ac == nil {
		return nil
	}
	if a := hosts.NormaliseServerAddress(ac.ServerAddress); a != "" && a != hosts.NormaliseIndexName(registry) {
		return nil
	}
	return ac
}

// pick is the set keyed by index, bound to it: keys are matched as logins
// are (Docker Hub's aliases, a scheme or a path ignored), in sorted order
// when several match; a set with nothing but its address is none.
func pick(configs map[string]registrytypes.AuthConfig, index string) *registrytypes.AuthConfig {
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := hosts.NormaliseIndexName(index)
	for _, k := range keys {
		ac := configs[k]
		if hosts.NormaliseServerAddress(k) != want || ac == (registrytypes.AuthConfig{ServerAddress: ac.ServerAddress}) {
			continue
		}
		ac.ServerAddress = k
		return &ac
	}
	return nil
}

// sendOnlyTo gives ac to a transport.Client for the requests to apiHost
// and no other (a token realm, a redirect to a blob store, another
// registry); nil sends nothing.
func sendOnlyTo(ac *registrytypes.AuthConfig, apiHost string) transport.CredentialFunc {
	if ac == nil {
		return nil
	}
	cred := transport.Credential{
		Username:     ac.Username,
		Password:     ac.Password,
		RefreshToken: ac.IdentityToken,
		AccessToken:  ac.RegistryToken,
	}
	want := hosts.NormaliseIndexName(apiHost)
	return func(hostport string) transport.Credential {
		if hosts.NormaliseIndexName(hostport) == want {
			return cred
		}
		return transport.Credential{}
	}
}

// credentialsIdentity names Credentials (either form) without holding them
// in clear, for single flights: two callers share an answer only when they
// carry the same credentials.
func credentialsIdentity(c Credentials) string {
	if c.Registries == nil {
		return credentialIdentity(c.Auth)
	}
	keys := make([]string, 0, len(c.Registries))
	for k := range c.Registries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	h.Write([]byte("registries\x00"))
	for _, k := range keys {
		ac := c.Registries[k]
		h.Write([]byte(k + "\x00" + credentialIdentity(&ac) + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))
}
