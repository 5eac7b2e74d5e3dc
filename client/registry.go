package client

import (
	"context"
	"net/http"

	"github.com/moby/moby/api/types/registry"
)

// Login calls POST /auth with the credentials as a plain JSON body; the
// daemon checks them against the registry.
func (c *Client) Login(ctx context.Context, auth registry.AuthConfig) (registry.AuthResponse, error) {
	var v registry.AuthResponse
	body, err := jsonBody(auth)
	if err != nil {
		return v, err
	}
	_, err = c.getJSON(ctx, request{method: http.MethodPost, path: "/auth", body: body, ctype: "application/json"}, &v)
	return v, err
}

// DistributionInspect calls GET /distribution/{name}/json.
func (c *Client) DistributionInspect(ctx context.Context, name string, auth *registry.AuthConfig) (registry.DistributionInspect, error) {
	var v registry.DistributionInspect
	h, err := authHeader(auth)
	if err != nil {
		return v, err
	}
	_, err = c.getJSON(ctx, request{method: http.MethodGet, path: "/distribution/" + name + "/json", header: h}, &v)
	return v, err
}
