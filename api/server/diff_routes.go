package server

import (
	"net/http"
	"strings"

	"github.com/wharfproject/wharf/api/types"
)

// What changed between two images, without pulling either: wharf's own
//
//	GET /wharf/images/diff?from=A&to=B[&sections=a,b][&remote=1][&platform=JSON]
//
// (also under /v1.NN/), with X-Registry-Auth or X-Registry-Config as on a
// remote inspect. A side is "local:NAME", "remote:NAME", "archive:PATH" or
// a bare NAME (local, or remote with remote=1). The answer is one
// types.ImageDiff: a key per section built.

const (
	diffPath = "/wharf/images/diff"
	// maxDiffSide caps from and to (4,096 bytes each): an image reference
	// is at most 255 bytes of repository plus a tag or digest, an archive
	// path at most PATH_MAX.
	maxDiffSide = 4096
)

func (s *Server) getImageDiff(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	// remote, platform and the credentials, as the files and packages
	// routes read them.
	opts, err := parseImageQuery(r)
	if err != nil {
		return err
	}
	req := types.DiffRequest{Platform: opts.Platform, Auth: opts.Auth, Registries: opts.Registries, MetaHeaders: opts.MetaHeaders}
	for _, side := range []struct {
		key string
		to  *types.DiffSide
	}{{"from", &req.From}, {"to", &req.To}} {
		v := r.Form.Get(side.key)
		switch {
		case v == "":
			return invalidArg("bad parameter: '%s' cannot be empty", side.key)
		case len(v) > maxDiffSide:
			return invalidArg("invalid %s: longer than %d bytes", side.key, maxDiffSide)
		case strings.IndexByte(v, 0) >= 0:
			return invalidArg("invalid %s: contains a NUL byte", side.key)
		}
		if *side.to, err = types.ParseDiffSide(v, opts.Remote); err != nil {
			return err
		}
	}
	for _, v := range r.Form["sections"] {
		for _, sec := range strings.Split(v, ",") {
			if sec = strings.TrimSpace(sec); sec != "" {
				req.Sections = append(req.Sections, sec)
			}
		}
	}
	if len(req.Sections) > len(types.DiffSections) {
		return invalidArg("invalid sections: more than the %d there are", len(types.DiffSections))
	}
	for _, sec := range req.Sections {
		if !validSection(sec) {
			return invalidArg("invalid section %q: want some of %s", sec, strings.Join(types.DiffSections, ","))
		}
	}
	d, err := s.backend.ImageDiff(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func validSection(sec string) bool {
	for _, s := range types.DiffSections {
		if s == sec {
			return true
		}
	}
	return false
}
