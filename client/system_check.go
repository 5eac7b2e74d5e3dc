package client

import (
	"context"
	"net/http"
	"net/url"
)

// CheckProblem is one problem the store check found.
type CheckProblem struct {
	// Kind: missing-blob, size-mismatch, digest-mismatch, bad-manifest,
	// index-mismatch, dangling-tag or stray-file.
	Kind    string `json:"Kind"`
	Image   string `json:"Image,omitempty"`
	Object  string `json:"Object,omitempty"`
	Message string `json:"Message"`
}

// CheckReport is the result of the store check.
type CheckReport struct {
	Full     bool
	Images   int
	Blobs    int
	Problems []CheckProblem
}

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
