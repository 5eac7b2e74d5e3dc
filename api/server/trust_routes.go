package server

import (
	"net/http"
)

// The signature policy, as `wharf trust show [NAME]` prints it:
//
//	GET /wharf/trust[?name=NAME]   (also under /v1.NN/)
//
// With name, the scope that applies to NAME and its requirements (the
// policy applies to the name asked for, never to a mirror); without, every
// scope. Without a policy: 200 with no scopes.
const trustPath = "/wharf/trust"

func (s *Server) getTrust(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	tp, err := s.backend.TrustPolicy(r.Context(), r.Form.Get("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tp)
	return nil
}
