package server

import (
	"net/http"

	"github.com/wharfproject/wharf/api/types"
)

// referrersQuery reads referrers=1 (and artifactType=) of a remote inspect:
// nil when not asked for, so the inspect costs what it costs without.
func referrersQuery(r *http.Request) *types.ReferrersQuery {
	if !boolValue(r, "referrers") {
		return nil
	}
	return &types.ReferrersQuery{ArtifactType: r.Form.Get("artifactType")}
}
