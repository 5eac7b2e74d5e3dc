package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// PackagesOptions are the options of ImagePackages.
type PackagesOptions struct {
	// Remote reads the image from its registry without pulling it.
	Remote bool
	// Platform selects the platform manifest.
	Platform *ocispec.Platform
	// Auth is sent as X-Registry-Auth; nil sends none.
	Auth *registry.AuthConfig
	// Registries: as InspectOptions.Registries.
	Registries map[string]registry.AuthConfig
}

// ImagePackages calls GET /wharf/images/{name}/packages (wharf's own
// endpoint): the image's packages, read without pulling it.
func (c *Client) ImagePackages(ctx context.Context, name string, opts PackagesOptions) (*types.ImagePackages, error) {
	q := url.Values{}
	if opts.Remote {
		q.Set("remote", "1")
	}
	if err := setPlatformJSON(q, opts.Platform); err != nil {
		return nil, err
	}
	h, err := credentialHeaders(opts.Auth, opts.Registries, false)
	if err != nil {
		return nil, err
	}
	var out types.ImagePackages
	r := request{method: http.MethodGet, path: "/wharf/images/" + name + "/packages", query: q, header: h}
	if _, err := c.getJSON(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
