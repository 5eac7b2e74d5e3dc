package types

import (
	"net/http"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// AttestationOptions are the query options of
// GET /images/{name}/attestations (API 1.55).
type AttestationOptions struct {
	// Platform selects the platform manifest whose attestations are
	// listed; nil: the image's own (local) or the daemon's (remote).
	Platform *ocispec.Platform
	// PredicateTypes keeps the statements of these in-toto predicate
	// types (type=, repeatable); empty keeps all.
	PredicateTypes []string
	// Statement adds each statement's verbatim body (statement=1);
	// without it no statement blob is read.
	Statement bool
	// Remote asks the registry instead of the local store (remote=1,
	// wharf's, as on inspect). Auth and MetaHeaders (X-Registry-Auth, X-Meta-*)
	// go to the registry, for a remote image or a local one whose
	// attestations are read from its registry.
	Remote      bool
	Auth        *registry.AuthConfig
	Registries  map[string]registry.AuthConfig // X-Registry-Config, as RemoteInspectOptions.Registries
	MetaHeaders http.Header
}
