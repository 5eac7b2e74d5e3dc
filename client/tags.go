package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
)

// TagsOptions are the options of RemoteTags.
type TagsOptions struct {
	// Limit stops after this many tags (0 = all).
	Limit int
	// Sort is "" (the registry's order) or "semver".
	Sort string
	// PageSize is the n= of each registry request (0 = the daemon's default).
	PageSize int
	// Auth is sent as X-Registry-Auth; nil sends none.
	Auth *registry.AuthConfig
	// Registries: as InspectOptions.Registries.
	Registries map[string]registry.AuthConfig
}

// RemoteTags calls GET /wharf/images/{name}/tags (wharf's own endpoint):
// the tags of the repository in its registry.
func (c *Client) RemoteTags(ctx context.Context, name string, opts TagsOptions) (types.RemoteTags, error) {
	q := url.Values{}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Sort != "" {
		q.Set("sort", opts.Sort)
	}
	if opts.PageSize > 0 {
		q.Set("page-size", strconv.Itoa(opts.PageSize))
	}
	var v types.RemoteTags
	h, err := credentialHeaders(opts.Auth, opts.Registries, false)
	if err != nil {
		return v, err
	}
	_, err = c.getJSON(ctx, request{method: http.MethodGet, path: "/wharf/images/" + name + "/tags", query: q, header: h}, &v)
	return v, err
}
