package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/types"
)

type versionKey struct{}

// apiVersionFrom returns the API version of the request; handlers gate fields
// on it. Unversioned paths are answered as the default (newest) version.
func apiVersionFrom(ctx context.Context) string {
	if v, ok := ctx.Value(versionKey{}).(string); ok {
		return v
	}
	return ""
}

// compareVersions compares dotted API versions numerically ("1.9" < "1.10").
func compareVersions(a, b string) int { return types.CompareAPIVersions(a, b) }

func versionLess(a, b string) bool { return compareVersions(a, b) < 0 }

// versionAtLeast reports a >= b.
func versionAtLeast(a, b string) bool { return compareVersions(a, b) >= 0 }

// versionError carries dockerd's exact texts; the class makes it a 400.
func tooOldError(v, minV string) error {
	return fmt.Errorf("client version %s is too old. Minimum supported API version is %s, please upgrade your client to a newer version%.0w", v, minV, errdefs.ErrInvalidArgument)
}

func tooNewError(v, maxV string) error {
	return fmt.Errorf("client version %s is too new. Maximum supported API version is %s%.0w", v, maxV, errdefs.ErrInvalidArgument)
}

// versionHeaders sets the headers dockerd sends on every response. dockerd
// says "Server: Docker/<ver> (linux)"; no client reads that header (the
// docker CLI and the Go SDK negotiate on Api-Version, Ostype and
// Docker-Experimental only), so wharfd names itself honestly.
func (s *Server) versionHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Server", "Wharf/"+s.opts.ServerVersion+" (linux)")
	h.Set("Api-Version", s.opts.APIVersion)
	h.Set("Ostype", "linux")
	h.Set("Docker-Experimental", "false")
}

// checkVersion validates the {version} of the path and returns the version
// the request is served at.
func (s *Server) checkVersion(requested string) (string, error) {
	if requested == "" {
		return s.opts.APIVersion, nil
	}
	if versionLess(requested, s.opts.MinAPIVersion) {
		return "", tooOldError(requested, s.opts.MinAPIVersion)
	}
	if compareVersions(requested, s.opts.APIVersion) > 0 {
		return "", tooNewError(requested, s.opts.APIVersion)
	}
	return requested, nil
}
