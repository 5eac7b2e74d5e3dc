package server

import (
	"net/http"

	"github.com/wharfproject/wharf/api/types"
)

// An image's packages, without pulling it: wharf's own endpoint,
//
//	GET /wharf/images/{name}/packages[?remote=1][&platform=JSON]
//
// (also under /v1.NN/), with X-Registry-Auth or X-Registry-Config as on a
// remote inspect; the answer is one types.ImagePackages (JSON).
const packagesPath = "/wharf/images/{name:.*}/packages"

func (s *Server) getImagePackages(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	q, err := parseImageQuery(r)
	if err != nil {
		return err
	}
	out, err := s.backend.ImagePackages(r.Context(), vars["name"], types.PackagesOptions{
		Remote: q.Remote, Platform: q.Platform,
		Auth: q.Auth, Registries: q.Registries, MetaHeaders: q.MetaHeaders,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
