package server

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/moby/moby/api/types/container"

	"github.com/wharfproject/wharf/api/types"
)

// What is inside an image, without pulling it: wharf's own endpoints,
//
//	GET  /wharf/images/{name}/files?path=P[&recursive=1][&layers=1][&remote=1][&platform=JSON]
//	GET  /wharf/images/{name}/archive?path=P[&remote=1][&platform=JSON]
//	HEAD /wharf/images/{name}/archive?path=P[&remote=1][&platform=JSON]
//
// (also under /v1.NN/), with X-Registry-Auth or X-Registry-Config as on a
// remote inspect. files answers newline-delimited JSON, one
// types.FileEntry a line; archive a tar of the path, as dockerd's
// GET /containers/{id}/archive, with the path's stat in
// X-Docker-Container-Path-Stat; HEAD that header alone. An error before the
// first byte is an ordinary error answer; one after it aborts the
// connection, so that a client never takes a cut list or tar for a whole
// one.

const (
	filesPath   = "/wharf/images/{name:.*}/files"
	archivePath = "/wharf/images/{name:.*}/archive"
	// pathStatHeader carries the base64 (standard encoding) of the JSON of
	// container.PathStat, as dockerd's archive endpoints send it.
	pathStatHeader = "X-Docker-Container-Path-Stat"
	// maxPathParam caps the path parameter (4,096 bytes): Linux's PATH_MAX;
	// no entry of a layer index is longer.
	maxPathParam = 4096
	// filesBuffer is the write buffer of the files stream (32 KiB): a few
	// hundred entries a write instead of one each, a listing of 10^6
	// entries costs no flush per line.
	filesBuffer = 32 << 10
)

func (s *Server) getImageFiles(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	opts, err := filesOptions(r, false)
	if err != nil {
		return err
	}
	opts.Recursive, opts.Layers = boolValue(r, "recursive"), boolValue(r, "layers")
	var bw *bufio.Writer
	var line []byte // one entry's line, its buffer reused
	err = s.backend.ImageFiles(r.Context(), vars["name"], opts, func(e types.FileEntry) error {
		if bw == nil {
			w.Header().Set("Content-Type", ndjson)
			w.WriteHeader(http.StatusOK)
			bw = bufio.NewWriterSize(w, filesBuffer)
		}
		line = appendFileEntry(line[:0], &e)
		_, err := bw.Write(line)
		return err
	})
	if err != nil && bw == nil {
		return err
	}
	if err != nil {
		s.log.WithError(err).Error("image files failed after the response started")
		panic(http.ErrAbortHandler)
	}
	if bw == nil {
		// No entry (an empty directory): an empty stream.
		w.Header().Set("Content-Type", ndjson)
		w.WriteHeader(http.StatusOK)
		return nil
	}
	if err := bw.Flush(); err != nil {
		panic(http.ErrAbortHandler)
	}
	return nil
}

func (s *Server) headImageArchive(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	opts, err := filesOptions(r, true)
	if err != nil {
		return err
	}
	st, err := s.backend.ImageStat(r.Context(), vars["name"], opts)
	if err != nil {
		return err
	}
	if err := setPathStatHeader(w.Header(), st); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) getImageArchive(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	opts, err := filesOptions(r, true)
	if err != nil {
		return err
	}
	started := false
	err = s.backend.ImageArchive(r.Context(), vars["name"], opts, func(st container.PathStat) (io.Writer, error) {
		if started {
			return w, nil
		}
		if err := setPathStatHeader(w.Header(), st); err != nil {
			return nil, err
		}
		w.Header().Set("Content-Type", "application/x-tar")
		w.WriteHeader(http.StatusOK)
		started = true
		return w, nil
	})
	if err != nil && !started {
		return err
	}
	if err != nil {
		s.log.WithError(err).Error("image archive failed after the response started")
		panic(http.ErrAbortHandler)
	}
	return nil
}

// filesOptions reads what files and archive share: the path, remote,
// platform and the credentials. needPath: archive's path must be given,
// as dockerd's archive endpoints require it.
func filesOptions(r *http.Request, needPath bool) (types.FilesOptions, error) {
	var opts types.FilesOptions
	if err := parseForm(r); err != nil {
		return opts, err
	}
	p := r.Form.Get("path")
	switch {
	case p == "" && needPath:
		return opts, invalidArg("bad parameter: 'path' cannot be empty")
	case len(p) > maxPathParam:
		return opts, invalidArg("invalid path: longer than %d bytes", maxPathParam)
	case strings.IndexByte(p, 0) >= 0:
		return opts, invalidArg("invalid path %q: contains a NUL byte", p)
	case p == "":
		p = "/"
	}
	opts.Path = p
	q, err := parseImageQuery(r)
	if err != nil {
		return opts, err
	}
	opts.Remote, opts.Platform = q.Remote, q.Platform
	opts.Auth, opts.Registries, opts.MetaHeaders = q.Auth, q.Registries, q.MetaHeaders
	return opts, nil
}

// setPathStatHeader is dockerd's setContainerPathStatHeader.
func setPathStatHeader(h http.Header, st container.PathStat) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	h.Set(pathStatHeader, base64.StdEncoding.EncodeToString(b))
	return nil
}
