package types

import (
	"net/http"
	"time"

	"github.com/moby/moby/api/types/registry"
)

// The update check: POST /wharf/images/check-remote
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
	// about to take. Absent without a policy.
	RemoteTrust *Trust `json:",omitempty"`

	// Newer versions (asked with newer=1): the highest tags of
	// the repository that are higher versions of the same shape as Tag
	// (same precision, v prefix and variant suffix; pre-releases only for
	// a pre-release tag), per level; empty when none. A tag that is not a
	// version (latest, stable, a date) gets none: it is compared by digest
	// only (VersionTag false). NewerError is why the listing failed.
	NewerPatch string `json:",omitempty"`
	NewerMinor string `json:",omitempty"`
	NewerMajor string `json:",omitempty"`
	// VersionTag is set with newer=1: whether Tag was read as a version.
	VersionTag *bool  `json:",omitempty"`
	NewerError string `json:",omitempty"`
	// NewerCached: the listing came from the listing freshness cache
	// (max-age): no request was made for it.
	NewerCached bool `json:",omitempty"`

	// Outdated bases (asked with base=1), for an image whose
	// manifest annotations or config labels carry
	// org.opencontainers.image.base.name and .base.digest: BaseStatus is
	// current, outdated or unknown (BaseError says why); empty when the
	// image does not name its base. BaseName and BaseDigest are what the
	// image names; BaseCurrentDigest what BaseName names in its registry
	// now (the top level) and BaseCurrentPlatformDigest, for an index, its
	// manifest for BasePlatform — the platform compared: the image's own,
	// else this host's. Only a change of that platform's manifest makes
	// the base outdated.
	BaseStatus                string `json:",omitempty"`
	BaseName                  string `json:",omitempty"`
	BaseDigest                string `json:",omitempty"`
	BaseCurrentDigest         string `json:",omitempty"`
	BaseCurrentPlatformDigest string `json:",omitempty"`
	BasePlatform              string `json:",omitempty"`
	BaseError                 string `json:",omitempty"`
	// BaseSource is how the base was found: "annotations" (the manifest's),
	// "labels" (the config's), or "layers" (base-name=REF given by the
	// user for an image that names no base: current when the image's
	// layers begin with the base's current layers, regctl's method; no
	// BaseDigest then).
	BaseSource string `json:",omitempty"`

	// Diff (asked with diff=1) is what changed between the local image
	// and the one a pull would bring: for an outdated tag, the tag as its
	// registry has it now; else, with newer=1, the lowest newer version
	// (patch, else minor, else major). Absent for a tag with neither.
	Diff *DiffSummary `json:",omitempty"`
}

// BaseStatus values.
const (
	BaseCurrent  = "current"
	BaseOutdated = "outdated"
	BaseUnknown  = "unknown"
)

// The annotations (and labels) that name an image's base (image-spec
// annotations.md; BuildKit writes them).
const (
	AnnotationBaseName   = "org.opencontainers.image.base.name"
	AnnotationBaseDigest = "org.opencontainers.image.base.digest"
)

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
	// Newer adds the newer versions of each version tag (newer=1): one
	// tag listing per repository per check, none within MaxAge of the last.
	Newer bool
	// Base adds the base check of images that name their base (base=1).
	Base bool
	// BaseName (base-name=REF; implies Base) is the base of the images
	// that name none: compared by layer prefix.
	BaseName string
	// Diff adds the summary of what changed (diff=1) to each outdated
	// tag, or a tag with a newer version: one diff of the local image
	// with the remote one each, built only on this request.
	Diff bool
}

// NewerVersions are the newer versions found (newer=1), lowest level
// first: patch, minor, major; nil when none.
func (r RemoteCheckResult) NewerVersions() []string {
	var out []string
	for _, n := range []string{r.NewerPatch, r.NewerMinor, r.NewerMajor} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// BaseOutdated: the base the image names (base=1) has moved for its
// platform.
func (r RemoteCheckResult) BaseOutdated() bool { return r.BaseStatus == BaseOutdated }
