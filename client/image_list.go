package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
)

// ImageListOptions are the options of ImageList.
type ImageListOptions struct {
	All     bool
	Digests bool
	Filters types.Filters
}

// ImageList calls GET /images/json.
func (c *Client) ImageList(ctx context.Context, opts ImageListOptions) ([]image.Summary, error) {
	q := url.Values{}
	if opts.All {
		q.Set("all", "1")
	}
	if opts.Digests {
		q.Set("digests", "1")
	}
	if f := opts.Filters.Encode(); f != "" {
		q.Set("filters", f)
	}
	var v []image.Summary
	_, err := c.getJSON(ctx, request{method: http.MethodGet, path: "/images/json", query: q}, &v)
	return v, err
}
