package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
)

// ImageHistory calls GET /images/{name}/history.
func (c *Client) ImageHistory(ctx context.Context, name string) ([]image.HistoryResponseItem, error) {
	var v []image.HistoryResponseItem
	_, err := c.getJSON(ctx, request{method: http.MethodGet, path: "/images/" + name + "/history"}, &v)
	return v, err
}

// ImageTag calls POST /images/{source}/tag?repo=R&tag=T. target is
// "repo[:tag]"; the tag travels separately, as docker clients send it.
func (c *Client) ImageTag(ctx context.Context, source, repo, tag string) error {
	q := url.Values{"repo": {repo}}
	if tag != "" {
		q.Set("tag", tag)
	}
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/images/" + source + "/tag", query: q})
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// ImageRemoveOptions are the options of ImageRemove.
type ImageRemoveOptions struct {
	Force   bool
	NoPrune bool
}

// ImageRemove calls DELETE /images/{name}.
func (c *Client) ImageRemove(ctx context.Context, name string, opts ImageRemoveOptions) ([]image.DeleteResponse, error) {
	q := url.Values{}
	if opts.Force {
		q.Set("force", "1")
	}
	if opts.NoPrune {
		q.Set("noprune", "1")
	}
	var v []image.DeleteResponse
	_, err := c.getJSON(ctx, request{method: http.MethodDelete, path: "/images/" + name, query: q}, &v)
	return v, err
}

// ImagesPrune calls POST /images/prune: images matching filters (dangling
// ones by default) and, on wharfd, every blob no image uses.
func (c *Client) ImagesPrune(ctx context.Context, filters types.Filters) (image.PruneReport, error) {
	q := url.Values{}
	if f := filters.Encode(); f != "" {
		q.Set("filters", f)
	}
	var v image.PruneReport
	_, err := c.getJSON(ctx, request{method: http.MethodPost, path: "/images/prune", query: q}, &v)
	return v, err
}
