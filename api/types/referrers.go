package types

import (
	"net/http"

	"github.com/moby/moby/api/types/registry"
)

// Referrer is one artifact that refers to an image (a signature, an SBOM,
// an attestation): an entry of RemoteImageInspect.Referrers, asked for with
// GET /images/{name}/json?remote=1&referrers=1.
type Referrer struct {
	// Subject is the digest the artifact refers to: the top-level digest
	// (Digest of the inspect answer) or the platform manifest's.
	Subject      string
	Digest       string
	MediaType    string
	ArtifactType string `json:",omitempty"`
	Size         int64
	Annotations  map[string]string `json:",omitempty"`
	// Created is the org.opencontainers.image.created annotation, when
	// present and an RFC 3339 time.
	Created string `json:",omitempty"`
	// Source says how it was found: referrers-api (the OCI 1.1 referrers
	// API), referrers-tag (the tag schema sha256-<hex>, for registries
	// without the API), cosign (the tags sha256-<hex>.sig/.att/.sbom) or
	// attestation (a buildx attestation manifest in the image's index).
	Source string
}

// Referrers is the Referrers field: absent unless asked for, then a list
// (empty when nothing refers to the image).
type Referrers []Referrer

// ReferrersQuery asks a remote inspect for referrers.
type ReferrersQuery struct {
	// ArtifactType keeps only referrers of this artifact type; "" = all.
	ArtifactType string
}

// RemoteTags is the answer of GET /wharf/images/{name}/tags.
type RemoteTags struct {
	// Registry is the index name that answered; Name the repository
	// (familiar form).
	Registry string
	Name     string
	Tags     []string
}

// RemoteTagsOptions are the options of a tag listing.
type RemoteTagsOptions struct {
	// Auth is the decoded X-Registry-Auth; nil means anonymous.
	Auth        *registry.AuthConfig
	Registries  map[string]registry.AuthConfig // X-Registry-Config, as RemoteInspectOptions.Registries
	MetaHeaders http.Header
	// Limit stops after this many tags (0 = all); see Sort for the order.
	Limit int
	// PageSize is the n= of each registry request (0 = the daemon's
	// constant, registry.TagPageSize).
	PageSize int
	// Sort is "" (the registry's order) or "semver".
	Sort string
}
