package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// PullCost is what a pull would download (types.PullCost).
type PullCost = types.PullCost

// PullCostOptions are the options of ImagePullCost.
type PullCostOptions struct {
	// Platform is the platform the pull would choose; nil: the daemon's.
	Platform *ocispec.Platform
	// Auth is sent as X-Registry-Auth; nil sends none.
	Auth *registry.AuthConfig
	// Registries: as InspectOptions.Registries.
	Registries map[string]registry.AuthConfig
}

// ImagePullCost calls GET /wharf/images/{name}/pull-cost (wharf's own):
// the layers and bytes `ImagePull(name)` would download now, given what
// the daemon's store holds. The daemon reads the manifest and no blob.
func (c *Client) ImagePullCost(ctx context.Context, name string, opts PullCostOptions) (*PullCost, error) {
	q := url.Values{}
	if err := setPlatformJSON(q, opts.Platform); err != nil {
		return nil, err
	}
	h, err := credentialHeaders(opts.Auth, opts.Registries, false)
	if err != nil {
		return nil, err
	}
	var out PullCost
	if _, err := c.getJSON(ctx, request{method: http.MethodGet, path: "/wharf/images/" + name + "/pull-cost", query: q, header: h}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
