package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/wharfproject/wharf/api/types"

	"github.com/moby/moby/api/types/system"
)

// PingResult is what /_ping tells about the daemon.
type PingResult struct {
	APIVersion string
	OSType     string
	Server     string
}

// Ping calls GET /_ping (unversioned, as docker clients do).
func (c *Client) Ping(ctx context.Context) (PingResult, error) {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/_ping", noVer: true})
	if err != nil {
		return PingResult{}, err
	}
	defer resp.Body.Close()
	_, _ = readCapped(resp.Body, maxErrorBody)
	return PingResult{
		APIVersion: resp.Header.Get("Api-Version"),
		OSType:     resp.Header.Get("Ostype"),
		Server:     resp.Header.Get("Server"),
	}, nil
}

// Version calls GET /version: the daemon's version.
func (c *Client) Version(ctx context.Context) (system.VersionResponse, error) {
	var v system.VersionResponse
	_, err := c.getJSON(ctx, request{method: http.MethodGet, path: "/version"}, &v)
	return v, err
}

// Info calls GET /info: Docker's fields and wharf's registries.
func (c *Client) Info(ctx context.Context) (types.Info, error) {
	v := types.Info{Info: &system.Info{}}
	_, err := c.getJSON(ctx, request{method: http.MethodGet, path: "/info"}, &v)
	return v, err
}

// TrustPolicy calls GET /wharf/trust: the signature policy's scope for name
// and its requirements, or every scope when name is "".
func (c *Client) TrustPolicy(ctx context.Context, name string) (types.TrustPolicy, error) {
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	var tp types.TrustPolicy
	_, err := c.getJSON(ctx, request{method: http.MethodGet, path: "/wharf/trust", query: q}, &tp)
	return tp, err
}
