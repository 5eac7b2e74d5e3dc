package server

import (
	"net/http"

	"github.com/wharfproject/wharf/api/types"
)

// What a pull would download, wharf's own endpoint:
//
//	GET /wharf/images/{name}/pull-cost[?platform=JSON]   (also under /v1.NN/)
//
// with X-Registry-Auth or X-Registry-Config as on a pull. It answers a
// types.PullCost (JSON): the layers of the manifest a pull of name would
// choose that the store lacks, with their sizes, and the bytes in all. The
// registry is asked for the manifest only, never a blob.
//
// A route of its own rather than a dry-run parameter on POST
// /images/create: dockerd ignores parameters it does not know, so a client
// sending dry-run to a Docker daemon would pull for real; and the answer
// is one JSON object, not create's progress stream, so a GET it is.

const pullCostPath = "/wharf/images/{name:.*}/pull-cost"

func (s *Server) getImagePullCost(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	// The image query as files and packages read it; a pull cost is
	// always the registry's, so remote= means nothing here.
	q, err := parseImageQuery(r)
	if err != nil {
		return err
	}
	opts := types.PullCostOptions{Platform: q.Platform, Auth: q.Auth, Registries: q.Registries, MetaHeaders: q.MetaHeaders}
	cost, err := s.backend.PullCost(r.Context(), vars["name"], opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, cost)
	return nil
}
