package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/wharfproject/wharf/api/types"
)

// CheckProblem and CheckReport are the wire types of the store check.
type (
	CheckProblem = types.CheckProblem
	CheckReport  = types.CheckReport
)

// SystemCheck calls GET /wharf/system/check (wharf's own endpoint): it
// verifies every image's blobs and, when full, hashes every blob.
func (c *Client) SystemCheck(ctx context.Context, full bool) (CheckReport, error) {
	q := url.Values{}
	if !full {
		q.Set("full", "0")
	}
	var rep CheckReport
	_, err := c.getJSON(ctx, request{method: http.MethodGet, path: "/wharf/system/check", query: q}, &rep)
	return rep, err
}
