// Package server is wharfd's HTTP API: the image part of the Docker Engine
// API plus remote inspection. It routes requests, negotiates the API
// version and gates fields by it, decodes credentials and references once,
// maps an error's class to its HTTP status in one place, and streams
// progress. It talks to the daemon only through the Backend interface.
package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/containerd/errdefs"
	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

// Options configure the API server.
type Options struct {
	// ServerVersion is wharfd's version, sent in the Server header.
	ServerVersion string
	// APIVersion is the advertised (and highest accepted) API version;
	// default types.DefaultAPIVersion.
	APIVersion string
	// MinAPIVersion is the lowest accepted API version; default
	// types.DefaultMinAPIVersion.
	MinAPIVersion string
	Logger        *logrus.Entry
	// Observer is told of every request (metrics.go); nil = none.
	Observer Observer
}

// Server routes Engine API requests to a Backend.
type Server struct {
	backend Backend
	opts    Options
	log     *logrus.Entry
}

// versionMatcher is dockerd's: every route also answers under /v1.NN.
const versionMatcher = "/v{version:[0-9.]+}"

// maxJSONBody caps request bodies that are JSON documents (POST /auth, the
// legacy push auth body): 1 MiB is far above any AuthConfig.
const maxJSONBody = 1 << 20

// New returns the API handler for backend.
func New(backend Backend, opts Options) http.Handler {
	if opts.APIVersion == "" {
		opts.APIVersion = types.DefaultAPIVersion
	}
	if opts.MinAPIVersion == "" {
		opts.MinAPIVersion = types.DefaultMinAPIVersion
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = "dev"
	}
	if opts.Logger == nil {
		opts.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	s := &Server{backend: backend, opts: opts, log: opts.Logger}
	m := s.router()
	return s.logRequests(s.observeRequests(m, s.fastRoutes(m)))
}

// apiFunc is a route handler; a returned error becomes {"message": …} with
// the status of its errdefs class.
type apiFunc func(w http.ResponseWriter, r *http.Request, vars map[string]string) error

type route struct {
	method, path string
	h            apiFunc
}

func (s *Server) routes() []route {
	return []route{
		// system
		{http.MethodGet, "/_ping", s.ping},
		{http.MethodHead, "/_ping", s.ping},
		{http.MethodGet, "/version", s.getVersion},
		{http.MethodGet, "/info", s.getInfo},
		{http.MethodGet, "/system/df", s.getDiskUsage},
		{http.MethodGet, "/events", s.getEvents},
		{http.MethodPost, "/auth", s.postAuth},
		{http.MethodGet, checkPath, s.getSystemCheck},               // wharf's own (check_routes.go)
		{http.MethodPost, exportIndexPath, s.postSystemExportIndex}, // wharf's own (export_index_routes.go)
		{http.MethodGet, trustPath, s.getTrust},                     // wharf's own (trust_routes.go)
		{http.MethodGet, tagsPath, s.getRemoteTags},                 // wharf's own (tags_routes.go)
		{http.MethodPost, copyPath, s.postImageCopy},                // wharf's own (copy_routes.go)
		{http.MethodPost, syncPath, s.postImagesSync},               // wharf's own (sync_routes.go)
		{http.MethodPost, syncExportPath, s.postImagesSyncExport},
		{http.MethodPost, syncImportPath, s.postImagesSyncImport},
		// what is inside an image, wharf's own (contents_routes.go)
		{http.MethodGet, filesPath, s.getImageFiles},
		{http.MethodGet, archivePath, s.getImageArchive},
		{http.MethodHead, archivePath, s.headImageArchive},
		{http.MethodGet, diffPath, s.getImageDiff},         // wharf's own (diff_routes.go)
		{http.MethodGet, packagesPath, s.getImagePackages}, // packages_routes.go
		// images; the fixed paths first, {name:.*} ones after
		{http.MethodGet, "/images/json", s.getImagesJSON},
		{http.MethodGet, "/images/get", s.getImagesGet},
		{http.MethodGet, "/images/search", s.getImagesSearch},
		{http.MethodPost, "/images/create", s.postImagesCreate},
		{http.MethodPost, "/images/load", s.postImagesLoad},
		{http.MethodPost, "/images/prune", s.postImagesPrune},
		// the update check, wharf's own (checkremote_routes.go)
		{http.MethodPost, checkRemotePath, s.postImagesCheckRemote},
		{http.MethodGet, "/images/{name:.*}/json", s.getImageByName},
		{http.MethodGet, "/images/{name:.*}/history", s.getImageHistory},
		{http.MethodGet, "/images/{name:.*}/attestations", s.getImageAttestations}, // API 1.55 (attestations_routes.go)
		{http.MethodGet, "/images/{name:.*}/get", s.getImagesGet},
		{http.MethodPost, "/images/{name:.*}/tag", s.postImageTag},
		{http.MethodPost, "/images/{name:.*}/push", s.postImagePush},
		{http.MethodDelete, "/images/{name:.*}", s.deleteImage},
		{http.MethodGet, "/distribution/{name:.*}/json", s.getDistribution},
		// containers: only what clients probe (docker ps, docker inspect)
		{http.MethodGet, "/containers/json", s.getContainersJSON},
		{http.MethodGet, "/containers/{name:.*}/json", s.getContainerByName},
		// prunes of what wharfd has none of, for `docker system prune` (prune_routes.go)
		{http.MethodPost, "/containers/prune", s.postContainersPrune},
		{http.MethodPost, "/networks/prune", s.postNetworksPrune},
		{http.MethodPost, "/volumes/prune", s.postVolumesPrune},
		{http.MethodPost, "/build/prune", s.postBuildPrune},
	}
}

func (s *Server) router() *mux.Router {
	m := mux.NewRouter()
	for _, rt := range s.routes() {
		h := s.makeHandler(rt.h)
		m.Path(versionMatcher + rt.path).Methods(rt.method).Handler(h)
		m.Path(rt.path).Methods(rt.method).Handler(h)
	}
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.versionHeaders(w)
		writeError(w, "", fmt.Errorf("page not found%.0w", errdefs.ErrNotFound)) // JSON at every version
	})
	m.Handle(versionMatcher+"/{path:.*}", notFound)
	m.NotFoundHandler = notFound
	m.MethodNotAllowedHandler = notFound
	return m
}

// makeHandler wraps h with the version middleware and the error writer.
func (s *Server) makeHandler(h apiFunc) http.Handler {
	serve := s.serveAPI(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vars := mux.Vars(r)
		if vars == nil {
			vars = map[string]string{}
		}
		serve(w, r, vars)
	})
}

// serveAPI is h behind the version middleware and the error writer, given
// the route's variables (by mux, or by the fast path of fastroute.go).
func (s *Server) serveAPI(h apiFunc) func(http.ResponseWriter, *http.Request, map[string]string) {
	return func(w http.ResponseWriter, r *http.Request, vars map[string]string) {
		s.versionHeaders(w)
		requested := vars["version"]
		version, err := s.checkVersion(requested)
		if err != nil {
			writeError(w, requested, err)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), versionKey{}, version))
		if err := h(w, r, vars); err != nil {
			status := statusFromError(err)
			if status >= http.StatusInternalServerError {
				s.log.WithError(err).Errorf("Handler for %s %s returned error", r.Method, r.URL.Path)
			}
			writeError(w, version, err)
		}
	}
}
