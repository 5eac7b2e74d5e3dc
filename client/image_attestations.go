package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// AttestationsOptions are the options of ImageAttestations.
type AttestationsOptions struct {
	// Platform selects the platform manifest whose attestations are
	// listed; nil: the local image's own, or the daemon's platform.
	Platform *ocispec.Platform
	// PredicateTypes keeps the statements of these in-toto predicate
	// types; empty keeps all.
	PredicateTypes []string
	// Statement asks for each statement's body.
	Statement bool
	// Remote asks the registry (remote=1) instead of the local store.
	Remote bool
	// Auth is sent as X-Registry-Auth; nil sends none.
	Auth *registry.AuthConfig
	// Registries: as InspectOptions.Registries.
	Registries map[string]registry.AuthConfig
}

// ImageAttestations calls GET /images/{name}/attestations (API 1.55): the
// in-toto statements attached to the image. It returns the decoded answer
// and the raw JSON bytes.
func (c *Client) ImageAttestations(ctx context.Context, name string, opts AttestationsOptions) ([]image.AttestationStatement, []byte, error) {
	// As moby's client: the endpoint is 1.55's, and a client pinned
	// below says so instead of sending what the daemon would not know.
	if c.version != "" && types.CompareAPIVersions(c.version, "1.55") < 0 {
		return nil, nil, fmt.Errorf("attestations requires API version 1.55 or higher; this client speaks %s", c.version)
	}
	q := url.Values{}
	if err := setPlatformJSON(q, opts.Platform); err != nil {
		return nil, nil, err
	}
	for _, pt := range opts.PredicateTypes {
		q.Add("type", pt)
	}
	if opts.Statement {
		q.Set("statement", "1")
	}
	if opts.Remote {
		q.Set("remote", "1")
	}
	h, err := credentialHeaders(opts.Auth, opts.Registries, false)
	if err != nil {
		return nil, nil, err
	}
	var v []image.AttestationStatement
	raw, err := c.getJSON(ctx, request{method: http.MethodGet, path: "/images/" + name + "/attestations", query: q, header: h}, &v)
	return v, raw, err
}
