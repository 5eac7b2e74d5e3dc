package types

import (
	"net/http"
	"time"

	"github.com/moby/moby/api/types/registry"
)

// The update check (issue 12, part 1): POST /wharf/images/check-remote
// compares each tagged local image with what its tag names in the registry
// now, and streams one RemoteCheckResult per image as the answers arrive.

// RemoteStatus values.
const (
	// RemoteCurrent: the tag still names the digest that was pulled (or pushed).
	RemoteCurrent = "current"
	// RemoteOutdated: the tag names another digest now.
	RemoteOutdated = "outdated"
	// RemoteMissing: the registry has no such tag or repository (404,
	// NAME_UNKNOWN, MANIFEST_UNKNOWN).
	RemoteMissing = "missing"
	// RemoteLocal: never pulled from or pushed to that repository (no
	// RepoDigest for it): nothing to compare, and nothing is asked.
	RemoteLocal = "local"
	// RemoteError: anything else (registry down, credentials refused, a
	// malformed answer); RemoteError says what.
	RemoteError = "error"
)

// RemoteCheckResult is one line of the check's stream: one local tag.
type RemoteCheckResult struct {
	// Repository and Tag are the local tag, in familiar form (as `images`).
	Repository string
	Tag        string
	// ID is the local image ID.
	ID string
	// LocalDigest is the digest that was pulled or pushed for this
	// repository (its RepoDigest: the index for a multi-platform pull);
	// empty when RemoteStatus is local.
	LocalDigest string `json:",omitempty"`
	// RemoteStatus is current, outdated, missing, local or error.
	RemoteStatus string
	// RemoteDigest is the digest the tag names in the registry now.
	RemoteDigest string `json:",omitempty"`
	// RemoteError is why the registry could not be asked (status error).
	RemoteError string `json:",omitempty"`
	// Platform is the platform the image was pulled for (os/arch[/variant]),
	// set when the pulled or the current top level is an index.
	Platform string `json:",omitempty"`
	// LocalPlatformDigest and RemotePlatformDigest are the manifests for
	// Platform, here and in the registry now (empty remote: the current
	// index does not provide Platform). Set for an outdated image.
	LocalPlatformDigest  string `json:",omitempty"`
	RemotePlatformDigest string `json:",omitempty"`
	// PlatformChanged, for an outdated image, says whether the manifest of
	// the platform the image was pulled for changed too: false when only
	// other platforms of the index moved (a re-pull gives the same image).
	PlatformChanged *bool `json:",omitempty"`
	// Cached is true when the answer came from the daemon's tag freshness
	// cache (max-age) and no request was made.
	Cached bool `json:",omitempty"`
	// RemoteTrust is, under a signature policy, its verdict on the digest
	// the tag names now, for an outdated tag: the update an operator is
	// about to take (issue 21). Absent without a policy.
	RemoteTrust *Trust `json:",omitempty"`
}

// RemoteCheckOptions are the options of the update check.
type RemoteCheckOptions struct {
	// Names narrow the check to the local tags they match (the reference
	// filter of `images`: "repo" is every tag of repo); empty = every
	// tagged image. A name that matches no local tag is a 404.
	Names []string
	// MaxAge lets an answer the registry gave within MaxAge stand without
	// asking again (0: always ask).
	MaxAge time.Duration
	// Auth holds credentials keyed by registry (X-Registry-Config, as for
	// a copy); a registry without an entry is asked anonymously. Each set
	// is sent only to the registry its key names (registry.Credentials.Registries, bound in registry/credentials.go).
	Auth map[string]registry.AuthConfig
	// MetaHeaders are the client's X-Meta-* headers, passed on to registries.
	MetaHeaders http.Header
}
