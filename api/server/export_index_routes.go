package server

import (
	"net/http"

	"github.com/wharfproject/wharf/api/types"
)

// The index.json export is wharf's own endpoint, not a Docker one:
//
//	POST /wharf/system/export-index   (also under /v1.NN/)
//
// The daemon keeps the data-root's index.json at most a second behind its
// image records (graph/store/BOLT.md "index.json"); this writes it now, so
// that an OCI tool (skopeo copy oci:, crane) started right after sees every
// image the daemon has. It answers 200 with an ExportIndexReport.

// ExportIndexReport is the wire type of the export.
type ExportIndexReport = types.ExportIndexReport

// exportIndexPath is the route of the index.json export.
const exportIndexPath = "/wharf/system/export-index"

func (s *Server) postSystemExportIndex(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	rep, err := s.backend.SystemExportIndex(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
