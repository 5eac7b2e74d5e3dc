package types

import (
	"net/http"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// PullCostOptions are the query options of
// GET /wharf/images/{name}/pull-cost (`wharf pull --dry-run`): the
// platform a pull would choose, and the caller's credentials as on a pull.
type PullCostOptions struct {
	// Platform is the platform a pull would choose; nil: the daemon's.
	Platform    *ocispec.Platform
	Auth        *registry.AuthConfig
	Registries  map[string]registry.AuthConfig
	MetaHeaders http.Header
}
