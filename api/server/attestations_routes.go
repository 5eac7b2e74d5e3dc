package server

import (
	"net/http"
	"strings"

	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
)

// getImageAttestations is GET /images/{name}/attestations (API 1.55): the
// in-toto statements attached to an image, as dockerd's
// getImageAttestations reads the query — one platform at most (the
// parameter is declared repeatable for later), type= repeatable and
// trimmed, statement= a bool — plus wharf's remote=1 (as on inspect: the
// registry's answer, with X-Registry-Auth). Always a JSON array. Like
// dockerd's, the route answers at every API version; its clients ask for
// 1.55 (moby's client refuses below).
func (s *Server) getImageAttestations(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	opts := types.AttestationOptions{
		Statement: boolValue(r, "statement"),
		Remote:    boolValue(r, "remote"),
	}
	if ps := r.Form["platform"]; len(ps) > 0 {
		if len(ps) > 1 {
			return invalidArg("only one platform value is currently supported")
		}
		if ps[0] != "" {
			p, err := decodePlatformJSON(ps[0])
			if err != nil {
				return err
			}
			opts.Platform = p
		}
	}
	for _, pt := range r.Form["type"] {
		if pt = strings.TrimSpace(pt); pt != "" {
			opts.PredicateTypes = append(opts.PredicateTypes, pt)
		}
	}
	// With remote=1, and for a local image whose attestations must be read
	// from its registry: the registry package gives a set that names its
	// registry (ServerAddress) to that registry only.
	auth, err := decodeAuth(r)
	if err != nil {
		return err
	}
	opts.Auth, opts.MetaHeaders = auth, metaHeaders(r)
	statements, err := s.backend.ImageAttestations(r.Context(), vars["name"], opts)
	if err != nil {
		return err
	}
	if statements == nil {
		statements = []image.AttestationStatement{}
	}
	writeJSON(w, http.StatusOK, statements)
	return nil
}
