package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/containerd/platforms"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// ConfigHeader carries credentials per registry (copy and the update
// check, as for a build).
const ConfigHeader = "X-Registry-Config"

// registryConfigHeader encodes credentials keyed by registry as
// X-Registry-Config (base64url JSON); nil without any.
func registryConfigHeader(auth map[string]registry.AuthConfig) (http.Header, error) {
	if len(auth) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(auth)
	if err != nil {
		return nil, err
	}
	return http.Header{ConfigHeader: {base64.URLEncoding.EncodeToString(b)}}, nil
}

// CopyResult is the aux message at the end of a copy stream.
type CopyResult = types.CopyResult

// CopyOptions are the options of ImageCopy.
type CopyOptions struct {
	// Platform copies one platform's manifest of an index; AllPlatforms
	// asks for the whole index (the default when SRC is one).
	Platform       *ocispec.Platform
	AllPlatforms   bool
	IncludeForeign bool
	// WithReferrers copies what refers to the image too (signatures,
	// SBOMs, attestations), after the image.
	WithReferrers bool
	// Auth holds credentials keyed by registry (host[:port], or Docker
	// Hub's https://index.docker.io/v1/); the daemon sends each set only to
	// its registry.
	Auth map[string]registry.AuthConfig
}

// ImageCopy calls POST /wharf/images/copy (wharf's own endpoint): it copies
// src to dst registry to registry through the daemon and returns the
// progress stream, which ends with an aux CopyResult.
func (c *Client) ImageCopy(ctx context.Context, src, dst string, opts CopyOptions) (io.ReadCloser, error) {
	q := url.Values{"src": {src}, "dst": {dst}}
	if opts.Platform != nil {
		q.Set("platform", platforms.Format(*opts.Platform))
	}
	if opts.AllPlatforms {
		q.Set("all-platforms", "1")
	}
	if opts.IncludeForeign {
		q.Set("include-foreign", "1")
	}
	if opts.WithReferrers {
		q.Set("with-referrers", "1")
	}
	h, err := registryConfigHeader(opts.Auth)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/wharf/images/copy", query: q, header: h})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
