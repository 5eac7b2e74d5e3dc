package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/moby/moby/api/types/image"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// ImageHistory calls GET /images/{name}/history.
func (c *Client) ImageHistory(ctx context.Context, name string) ([]image.HistoryResponseItem, error) {
	return c.ImageHistoryPlatform(ctx, name, nil)
}

// ImageHistoryPlatform is ImageHistory of one present platform of a
// multi-platform image (platform, API 1.48; nil: the daemon's choice).
func (c *Client) ImageHistoryPlatform(ctx context.Context, name string, platform *ocispec.Platform) ([]image.HistoryResponseItem, error) {
	q := url.Values{}
	if err := addJSONPlatforms(q, "platform", platform); err != nil {
		return nil, err
	}
	var v []image.HistoryResponseItem
	_, err := c.getJSON(ctx, request{method: http.MethodGet, path: "/images/" + name + "/history", query: q}, &v)
	return v, err
}

// addJSONPlatforms adds each platform as a JSON OCI platform value of key
// (the form dockerd reads for history, save, load and rmi).
func addJSONPlatforms(q url.Values, key string, ps ...*ocispec.Platform) error {
	for _, p := range ps {
		if p == nil {
			continue
		}
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		q.Add(key, string(b))
	}
	return nil
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
	// Platforms remove only those platforms of a multi-platform image
	// (API 1.50); the image stays while others remain.
	Platforms []ocispec.Platform
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
	for i := range opts.Platforms {
		if err := addJSONPlatforms(q, "platforms", &opts.Platforms[i]); err != nil {
			return nil, err
		}
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
