package server

import (
	"bytes"
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

// sbomTypes are the documents' media types, by format.
var sbomTypes = map[string]string{
	"cyclonedx-json": "application/vnd.cyclonedx+json",
	"spdx-json":      "application/spdx+json",
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
	if _, ok := sbomTypes[format]; !ok && format != "" && format != "json" {
		return invalidArg("invalid format %q: want json, cyclonedx-json or spdx-json", format)
	}
	out, err := s.backend.ImagePackages(r.Context(), vars["name"], types.PackagesOptions{
		Remote: q.Remote, Platform: q.Platform,
		Auth: q.Auth, Registries: q.Registries, MetaHeaders: q.MetaHeaders,
	})
	if err != nil {
		return err
	}
	ct, ok := sbomTypes[format]
	if !ok {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	// The document is built whole before the answer starts: an error is
	// then an error answer, not a cut one.
	var doc bytes.Buffer
	tool := sbom.Tool{Name: "wharf", Version: s.opts.ServerVersion}
	if format == "cyclonedx-json" {
		err = sbom.CycloneDX(&doc, out, tool, time.Now())
	} else {
		err = sbom.SPDX(&doc, out, tool, time.Now())
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc.Bytes())
	return nil
}
