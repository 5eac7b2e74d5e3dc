package client

import (
	"context"
	"io"
	"net/http"
	"net/url"

	"github.com/containerd/platforms"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ImportOptions are the options of ImageImport.
type ImportOptions struct {
	// Ref is "repo[:tag]"; it travels whole in the repo parameter, as the
	// docker CLI sends it.
	Ref      string
	Changes  []string
	Message  string
	Platform *ocispec.Platform
}

// ImageImport calls POST /images/create?fromSrc=- with the tar in src. The
// answer is a JSON message stream.
func (c *Client) ImageImport(ctx context.Context, src io.Reader, opts ImportOptions) (io.ReadCloser, error) {
	q := url.Values{"fromSrc": {"-"}}
	if opts.Ref != "" {
		q.Set("repo", opts.Ref)
	}
	for _, ch := range opts.Changes {
		q.Add("changes", ch)
	}
	if opts.Message != "" {
		q.Set("message", opts.Message)
	}
	if opts.Platform != nil {
		q.Set("platform", platforms.Format(*opts.Platform))
	}
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/images/create", query: q, body: src, ctype: "application/x-tar"})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ImageSave calls GET /images/get?names=…: a tar of the images.
func (c *Client) ImageSave(ctx context.Context, names []string) (io.ReadCloser, error) {
	return c.ImageSavePlatforms(ctx, names, nil)
}

// ImageSavePlatforms is ImageSave of some present platforms of each image
// (platform, API 1.48; several are sent, which wharfd and dockerd read at
// API 1.52); none saves every present platform.
func (c *Client) ImageSavePlatforms(ctx context.Context, names []string, ps []ocispec.Platform) (io.ReadCloser, error) {
	q := url.Values{"names": names}
	for i := range ps {
		if err := addJSONPlatforms(q, "platform", &ps[i]); err != nil {
			return nil, err
		}
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/images/get", query: q})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ImageLoad calls POST /images/load with the tar in src. quiet=1 asks for
// only the final "Loaded image" lines.
func (c *Client) ImageLoad(ctx context.Context, src io.Reader, quiet bool) (io.ReadCloser, error) {
	return c.ImageLoadPlatforms(ctx, src, quiet, nil)
}

// ImageLoadPlatforms is ImageLoad of some platforms of a multi-platform
// image (platform, API 1.48); none loads every platform the archive holds.
func (c *Client) ImageLoadPlatforms(ctx context.Context, src io.Reader, quiet bool, ps []ocispec.Platform) (io.ReadCloser, error) {
	q := url.Values{"quiet": {"0"}}
	if quiet {
		q.Set("quiet", "1")
	}
	for i := range ps {
		if err := addJSONPlatforms(q, "platform", &ps[i]); err != nil {
			return nil, err
		}
	}
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/images/load", query: q, body: src, ctype: "application/x-tar"})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// PullOptions are the options of ImagePull.
type PullOptions struct {
	// Tag is a tag or a digest ("sha256:…"); empty pulls every tag.
	Tag      string
	Platform *ocispec.Platform
	Auth     *registry.AuthConfig
	// Registries: as InspectOptions.Registries.
	Registries map[string]registry.AuthConfig
}

// ImagePull calls POST /images/create?fromImage=NAME&tag=T. The platform goes
// as the plain "os/arch[/variant]" string, as the docker CLI sends it.
func (c *Client) ImagePull(ctx context.Context, name string, opts PullOptions) (io.ReadCloser, error) {
	q := url.Values{"fromImage": {name}}
	if opts.Tag != "" {
		q.Set("tag", opts.Tag)
	}
	if opts.Platform != nil {
		q.Set("platform", platforms.Format(*opts.Platform))
	}
	h, err := credentialHeaders(opts.Auth, opts.Registries, true)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/images/create", query: q, header: h})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// PushOptions are the options of ImagePush.
type PushOptions struct {
	// Tag is the tag to push; empty pushes every local tag of the repository.
	Tag  string
	Auth *registry.AuthConfig
	// Registries: as InspectOptions.Registries.
	Registries map[string]registry.AuthConfig
	// Platform pushes that present platform's manifest alone (API 1.46).
	Platform *ocispec.Platform
}

// ImagePush calls POST /images/{name}/push?tag=T, always with an
// X-Registry-Auth header ("{}" when anonymous: dockerd answers 400 without it).
func (c *Client) ImagePush(ctx context.Context, name string, opts PushOptions) (io.ReadCloser, error) {
	q := url.Values{}
	if opts.Tag != "" {
		q.Set("tag", opts.Tag)
	}
	if err := addJSONPlatforms(q, "platform", opts.Platform); err != nil {
		return nil, err
	}
	h, err := credentialHeaders(opts.Auth, opts.Registries, true)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/images/" + name + "/push", query: q, header: h})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
