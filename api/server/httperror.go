package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errhttp"
)

// statusFromError maps an error to its HTTP status, once: an error that
// says its own status (HTTPStatus() in 400–599: the registry package's
// ErrUpstream is 502, a bad gateway) wins, then containerd's errhttp maps the
// errdefs class (NotFound 404, InvalidArgument 400, Conflict 409,
// Unauthenticated 401, PermissionDenied 403, Unavailable 503, …), as dockerd's
// httpstatus.FromError does. Unclassified errors are 500.
func statusFromError(err error) int {
	if err == nil {
		return http.StatusInternalServerError
	}
	var se interface{ HTTPStatus() int }
	if errors.As(err, &se) {
		if s := se.HTTPStatus(); s >= 400 && s < 600 {
			return s
		}
	}
	if errdefs.IsAlreadyExists(err) {
		return http.StatusConflict // errhttp has no case for it
	}
	return errhttp.ToHTTP(err)
}

// errorResponse is the Engine API error body.
type errorResponse struct {
	Message string `json:"message"`
}

// writeError writes err as {"message": …} with the status of its class.
// Requests at API versions below 1.24 get plain text, as dockerd gives them,
// so that very old clients print a readable "too old" message.
func writeError(w http.ResponseWriter, version string, err error) {
	status := statusFromError(err)
	if version != "" && versionLess(version, "1.24") {
		http.Error(w, err.Error(), status)
		return
	}
	writeJSON(w, status, errorResponse{Message: err.Error()})
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorResponse{Message: "encoding response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
