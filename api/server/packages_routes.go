package server

import (
	"bytes"
	"io"
	"net/http"
	"time"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/sbom"
)

// An image's packages, without pulling it: wharf's own endpoint,
//
//	GET /wharf/images/{name}/packages[?remote=1][&platform=JSON][&format=F]
//
// (also under /v1.NN/), with X-Registry-Auth or X-Registry-Config as on a
// remote inspect; the answer is one types.ImagePackages (JSON), or with
// format=cyclonedx-json or spdx-json (syft's names) that list as a
// CycloneDX or SPDX 2.3 document, which grype, trivy and syft convert read.
const packagesPath = "/wharf/images/{name:.*}/packages"

// sbomFormats are the documents format= asks for, by syft's names: each
// one's media type and writer.
var sbomFormats = map[string]struct {
	mediaType string
	write     func(io.Writer, *types.ImagePackages, sbom.Tool, time.Time) error
}{
	"cyclonedx-json": {"application/vnd.cyclonedx+json", sbom.CycloneDX},
	"spdx-json":      {"application/spdx+json", sbom.SPDX},
}

func (s *Server) getImagePackages(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	q, err := parseImageQuery(r)
	if err != nil {
		return err
	}
	format := r.Form.Get("format")
	f, isDoc := sbomFormats[format]
	if !isDoc && format != "" && format != "json" {
		return invalidArg("invalid format %q: want json, cyclonedx-json or spdx-json", format)
	}
	out, err := s.backend.ImagePackages(r.Context(), vars["name"], types.PackagesOptions{
		Remote: q.Remote, Platform: q.Platform,
		Auth: q.Auth, Registries: q.Registries, MetaHeaders: q.MetaHeaders,
	})
	if err != nil {
		return err
	}
	if !isDoc {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	// The document is built whole before the answer starts: an error is
	// then an error answer, not a cut one.
	var doc bytes.Buffer
	if err := f.write(&doc, out, sbom.Tool{Name: "wharf", Version: s.opts.ServerVersion}, time.Now()); err != nil {
		return err
	}
	w.Header().Set("Content-Type", f.mediaType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc.Bytes())
	return nil
}
