package server

import (
	"net/http"

	"github.com/wharfproject/wharf/api/types"
)

// The store check is wharf's own endpoint, not a Docker one:
//
//	GET /wharf/system/check[?full=0]   (also under /v1.NN/)
//
// It answers 200 with a CheckReport whether or not problems were found
// (the CLI exits 1 when Problems is not empty); full=0 skips hashing.

// CheckProblem and CheckReport are the wire types of the store check.
type (
	CheckProblem = types.CheckProblem
	CheckReport  = types.CheckReport
)

// checkPath is the route of the store check.
const checkPath = "/wharf/system/check"

func (s *Server) getSystemCheck(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	rep, err := s.backend.SystemCheck(r.Context(), boolValueOrDefault(r, "full", true))
	if err != nil {
		return err
	}
	if rep.Problems == nil {
		rep.Problems = []CheckProblem{}
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
