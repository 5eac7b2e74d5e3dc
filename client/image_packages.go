package client

import (
	"context"
	"io"
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
	r, err := opts.request(name, "")
	if err != nil {
		return nil, err
	}
	var out types.ImagePackages
	if _, err := c.getJSON(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ImagePackagesDocument calls the same endpoint with format=F: the list
// as the daemon writes it in that SBOM format, "cyclonedx-json" or
// "spdx-json" (syft's names). The caller closes the reader.
func (c *Client) ImagePackagesDocument(ctx context.Context, name string, opts PackagesOptions, format string) (io.ReadCloser, error) {
	r, err := opts.request(name, format)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

func (o PackagesOptions) request(name, format string) (request, error) {
	q := url.Values{}
	if o.Remote {
		q.Set("remote", "1")
	}
	if format != "" {
		q.Set("format", format)
	}
	if err := setPlatformJSON(q, o.Platform); err != nil {
		return request{}, err
	}
	h, err := credentialHeaders(o.Auth, o.Registries, false)
	if err != nil {
		return request{}, err
	}
	return request{method: http.MethodGet, path: "/wharf/images/" + name + "/packages", query: q, header: h}, nil
}
