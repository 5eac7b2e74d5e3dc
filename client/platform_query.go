package client

import (
	"encoding/json"
	"net/url"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// setPlatformJSON sets the platform query parameter as the API's JSON
// routes read it (a JSON-encoded OCI platform, as dockerd's inspect and
// history take it); nil sets nothing.
func setPlatformJSON(q url.Values, p *ocispec.Platform) error {
	if p == nil {
		return nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	q.Set("platform", string(b))
	return nil
}
