package server

import (
	"net/http"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// imageQuery is the part of a query that picks the image wharf reads
// without pulling it (files, archive, packages): remote=1, one platform
// (JSON), and the caller's credentials as on a remote inspect.
type imageQuery struct {
	Remote      bool
	Platform    *ocispec.Platform
	Auth        *registry.AuthConfig
	Registries  map[string]registry.AuthConfig
	MetaHeaders http.Header
}

// parseImageQuery reads an imageQuery; the form must be parsed already
// (parseForm).
func parseImageQuery(r *http.Request) (imageQuery, error) {
	var q imageQuery
	q.Remote = boolValue(r, "remote")
	if ps := r.Form["platform"]; len(ps) > 0 {
		if len(ps) > 1 {
			return q, invalidArg("only one platform value is supported")
		}
		if ps[0] != "" {
			pl, err := decodePlatformJSON(ps[0])
			if err != nil {
				return q, err
			}
			q.Platform = pl
		}
	}
	auth, regs, err := requestCredentials(r, decodeAuth)
	if err != nil {
		return q, err
	}
	q.Auth, q.Registries, q.MetaHeaders = auth, regs, metaHeaders(r)
	return q, nil
}
