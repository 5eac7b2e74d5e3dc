package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// maxManifestBody caps a raw manifest answer (4 MiB), the limit registries
// and containerd put on manifests.
const maxManifestBody = 4 << 20

// InspectOptions are the options of ImageInspect and ImageInspectRemote.
type InspectOptions struct {
	// Platform selects an index entry; sent as JSON OCI platform.
	Platform *ocispec.Platform
	// Manifests asks for the Manifests list.
	Manifests bool
	// Auth is sent as X-Registry-Auth (remote only); nil sends none.
	Auth *registry.AuthConfig
	// Registries are credentials keyed by registry (host[:port], or Docker
	// Hub's https://index.docker.io/v1/), sent as X-Registry-Config (remote
	// only): the daemon uses them instead of Auth and gives each registry
	// it searches the set keyed by it.
	Registries map[string]registry.AuthConfig
	// Referrers asks a remote inspect for the Referrers list, of
	// ArtifactType only when it is set.
	Referrers    bool
	ArtifactType string
	// Verify asks a remote inspect to verify the image's signatures even
	// without a signature policy (under one, every remote inspect does).
	Verify bool
}

func (o InspectOptions) query(remote bool) (url.Values, error) {
	q := url.Values{}
	if remote {
		q.Set("remote", "1")
	}
	if o.Manifests {
		q.Set("manifests", "1")
	}
	if remote && o.Referrers {
		q.Set("referrers", "1")
		if o.ArtifactType != "" {
			q.Set("artifactType", o.ArtifactType)
		}
	}
	if remote && o.Verify {
		q.Set("verify", "1")
	}
	if err := setPlatformJSON(q, o.Platform); err != nil {
		return nil, err
	}
	return q, nil
}

// ImageInspect calls GET /images/{name}/json and returns the decoded answer
// and the raw JSON bytes.
func (c *Client) ImageInspect(ctx context.Context, name string, opts InspectOptions) (types.ImageInspect, []byte, error) {
	var v types.ImageInspect
	q, err := opts.query(false)
	if err != nil {
		return v, nil, err
	}
	raw, err := c.getJSON(ctx, request{method: http.MethodGet, path: "/images/" + name + "/json", query: q}, &v)
	return v, raw, err
}

// ImageInspectRemote calls GET /images/{name}/json?remote=1: the image's
// metadata from its registry. It returns the decoded answer and the raw bytes.
func (c *Client) ImageInspectRemote(ctx context.Context, name string, opts InspectOptions) (types.RemoteImageInspect, []byte, error) {
	var v types.RemoteImageInspect
	q, err := opts.query(true)
	if err != nil {
		return v, nil, err
	}
	h, err := credentialHeaders(opts.Auth, opts.Registries, false)
	if err != nil {
		return v, nil, err
	}
	raw, err := c.getJSON(ctx, request{method: http.MethodGet, path: "/images/" + name + "/json", query: q, header: h}, &v)
	return v, raw, err
}

// RemoteManifest calls GET /images/{name}/json?remote=1&raw=1: the manifest
// bytes exactly as the registry served them, and their media type.
func (c *Client) RemoteManifest(ctx context.Context, name string, opts InspectOptions) ([]byte, string, error) {
	q, err := opts.query(true)
	if err != nil {
		return nil, "", err
	}
	q.Set("raw", "1")
	h, err := credentialHeaders(opts.Auth, opts.Registries, false)
	if err != nil {
		return nil, "", err
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/images/" + name + "/json", query: q, header: h})
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := readCapped(resp.Body, maxManifestBody)
	if err != nil {
		return nil, "", fmt.Errorf("reading manifest of %s: %w", name, err)
	}
	return b, resp.Header.Get("Content-Type"), nil
}

// ContainerInspect calls GET /containers/{name}/json. wharfd has no
// containers and answers 404 "No such container"; the generic inspect uses it
// as docker does, before falling back to images.
func (c *Client) ContainerInspect(ctx context.Context, name string) (json.RawMessage, error) {
	raw, err := c.getJSON(ctx, request{method: http.MethodGet, path: "/containers/" + name + "/json"}, nil)
	return raw, err
}
