package client

import (
	"context"
	"net/http"

	"github.com/wharfproject/wharf/api/types"
)

// ExportIndexReport is the wire type of the index.json export.
type ExportIndexReport = types.ExportIndexReport

// SystemExportIndex calls POST /wharf/system/export-index (wharf's own
// endpoint): the daemon writes its data-root's index.json now, so that OCI
// tools reading the data-root see every image it has.
func (c *Client) SystemExportIndex(ctx context.Context) (ExportIndexReport, error) {
	var rep ExportIndexReport
	_, err := c.getJSON(ctx, request{method: http.MethodPost, path: "/wharf/system/export-index"}, &rep)
	return rep, err
}
