package server

import (
	"net/http"
	"strconv"

	"github.com/wharfproject/wharf/api/types"
)

// The tag listing is wharf's own endpoint, not a Docker one:
//
//	GET /wharf/images/{name}/tags[?limit=N&sort=semver&page-size=N]   (also under /v1.NN/)
//
// with X-Registry-Auth as for a remote inspect. It answers 200 with
// {Registry, Name, Tags[]}: one JSON document, not a stream — the listing
// is bounded (registry.TagPageSize tags a request, at most 1,000 pages and
// 64 MiB), and a sorted answer needs every tag before the first line.
// page-size sets the n= of each registry request (default the daemon's
// constant, 1,000), so that tests and users of registries with small page
// limits can see the pagination.

// tagsPath is the route of the tag listing.
const tagsPath = "/wharf/images/{name:.*}/tags"

func (s *Server) getRemoteTags(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	auth, regs, err := requestCredentials(r, decodeAuth)
	if err != nil {
		return err
	}
	opts := types.RemoteTagsOptions{Auth: auth, Registries: regs, MetaHeaders: metaHeaders(r), Sort: r.Form.Get("sort")}
	if opts.Limit, err = intParam(r, "limit"); err != nil {
		return err
	}
	if opts.PageSize, err = intParam(r, "page-size"); err != nil {
		return err
	}
	tags, err := s.backend.RemoteTags(r.Context(), vars["name"], opts)
	if err != nil {
		return err
	}
	if tags.Tags == nil {
		tags.Tags = []string{}
	}
	writeJSON(w, http.StatusOK, tags)
	return nil
}

// intParam reads a non-negative integer parameter; absent is 0.
func intParam(r *http.Request, k string) (int, error) {
	v := r.Form.Get(k)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, invalidArg("invalid %s %q: want a non-negative integer", k, v)
	}
	return n, nil
}
