package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// maxDiffBody caps a diff's answer (128 MiB): the daemon lists at most
// 100,000 file changes, each some 600 bytes of JSON with both sides'
// entries, beside sections far smaller.
const maxDiffBody = 128 << 20

// DiffOptions are the options of ImageDiff.
type DiffOptions struct {
	// Sections to build; none: every one.
	Sections []string
	// Remote reads a bare name from its registry (as remote:NAME).
	Remote bool
	// Platform selects the platform manifest of both sides.
	Platform *ocispec.Platform
	// Auth is sent as X-Registry-Auth; nil sends none.
	Auth *registry.AuthConfig
	// Registries: as InspectOptions.Registries.
	Registries map[string]registry.AuthConfig
}

// ImageDiff calls GET /wharf/images/diff (wharf's own endpoint): what
// changed from image from to image to, each "local:NAME", "remote:NAME",
// "archive:PATH" or a bare NAME. raw is the daemon's JSON as it sent it.
func (c *Client) ImageDiff(ctx context.Context, from, to string, opts DiffOptions) (d types.ImageDiff, raw []byte, err error) {
	q := url.Values{}
	q.Set("from", from)
	q.Set("to", to)
	if len(opts.Sections) > 0 {
		q.Set("sections", strings.Join(opts.Sections, ","))
	}
	if opts.Remote {
		q.Set("remote", "1")
	}
	if err := setPlatformJSON(q, opts.Platform); err != nil {
		return d, nil, err
	}
	h, err := credentialHeaders(opts.Auth, opts.Registries, false)
	if err != nil {
		return d, nil, err
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/wharf/images/diff", query: q, header: h})
	if err != nil {
		return d, nil, err
	}
	defer resp.Body.Close()
	raw, err = readCapped(resp.Body, maxDiffBody)
	if err != nil {
		return d, nil, err
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return d, raw, fmt.Errorf("decoding the diff: %w", err)
	}
	return d, raw, nil
}
