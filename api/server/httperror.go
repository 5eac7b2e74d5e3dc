package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/containerd/errdefs"
)

// statusFromError maps an errdefs class to its HTTP status, as dockerd's
// httpstatus.FromError does. Unclassified errors are 500.
func statusFromError(err error) int {
	switch {
	case err == nil:
		return http.StatusInternalServerError
	case errdefs.IsNotFound(err):
		return http.StatusNotFound
	case errdefs.IsInvalidArgument(err):
		return http.StatusBadRequest
	case errdefs.IsConflict(err), errdefs.IsAlreadyExists(err):
		return http.StatusConflict
	case errdefs.IsUnauthorized(err):
		return http.StatusUnauthorized
	case errdefs.IsPermissionDenied(err):
		return http.StatusForbidden
	case errdefs.IsUnavailable(err):
		return http.StatusServiceUnavailable
	case errdefs.IsNotModified(err):
		return http.StatusNotModified
	case errdefs.IsNotImplemented(err):
		return http.StatusNotImplemented
	}
	var se interface{ HTTPStatus() int }
	if errors.As(err, &se) {
		if s := se.HTTPStatus(); s >= 400 && s < 600 {
			return s
		}
	}
	return http.StatusInternalServerError
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
