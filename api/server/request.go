package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
)

// authHeader carries the base64url JSON AuthConfig. Never log it.
const authHeader = "X-Registry-Auth"

func invalidArg(format string, args ...any) error {
	return fmt.Errorf(format+"%.0w", append(args, errdefs.ErrInvalidArgument)...)
}

// parseForm parses the query; a malformed query is a 400.
func parseForm(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
	}
	return nil
}

// boolValue is dockerd's httputils.BoolValue: absent, "", "0", "no",
// "false" and "none" are false, anything else true.
func boolValue(r *http.Request, k string) bool {
	s := strings.ToLower(strings.TrimSpace(r.Form.Get(k)))
	return !(s == "" || s == "0" || s == "no" || s == "false" || s == "none")
}

// boolValueOrDefault is boolValue with a default when the key is absent.
func boolValueOrDefault(r *http.Request, k string, def bool) bool {
	if _, ok := r.Form[k]; !ok {
		return def
	}
	return boolValue(r, k)
}

// parseFilters reads the filters parameter; a bad one is a 400.
func parseFilters(r *http.Request) (types.Filters, error) {
	f, err := types.ParseFilters(r.Form.Get("filters"))
	if err != nil {
		return nil, fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
	}
	return f, nil
}

// validateFilters rejects unknown keys with dockerd's "Invalid filter 'k'".
func validateFilters(f types.Filters, allowed ...string) error {
	if err := f.Validate(allowed...); err != nil {
		return fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
	}
	return nil
}

// maxAuthHeader caps X-Registry-Auth (64 KiB, as documented): credentials
// and registry tokens fit in a few KiB, so anything larger is not an
// AuthConfig; refusing it keeps a client from handing a registry a
// megabyte "password" through wharfd.
const maxAuthHeader = 64 << 10

// decodeAuth decodes X-Registry-Auth leniently: empty, "{}" or undecodable
// means anonymous (nil), as dockerd does for pull, push and distribution.
// A header (all its values together) over maxAuthHeader is a 400.
func decodeAuth(r *http.Request) (*registry.AuthConfig, error) {
	n := 0
	for _, v := range r.Header.Values(authHeader) {
		n += len(v)
	}
	if n > maxAuthHeader {
		return nil, invalidArg("%s header is %d bytes, larger than the %d allowed", authHeader, n, maxAuthHeader)
	}
	a, err := authconfig.Decode(r.Header.Get(authHeader))
	if err != nil || a == nil || *a == (registry.AuthConfig{}) {
		return nil, nil
	}
	return a, nil
}

// requestCredentials are the credentials of a pull, a push or a remote
// inspect. With X-Registry-Config, the sets keyed by registry
// (decodeAuthConfigs: an X-Registry-Auth joins them only when it names its
// registry), and each registry searched gets its own. Without it, the one
// set single reads (X-Registry-Auth), which the daemon binds to the first
// registry searched.
func requestCredentials(r *http.Request, single func(*http.Request) (*registry.AuthConfig, error)) (*registry.AuthConfig, map[string]registry.AuthConfig, error) {
	if len(r.Header.Values(configHeader)) == 0 {
		a, err := single(r)
		return a, nil, err
	}
	m, err := decodeAuthConfigs(r)
	if m == nil && err == nil {
		m = map[string]registry.AuthConfig{} // sent, and empty: anonymous everywhere
	}
	return nil, m, err
}

// metaHeaders returns the client's X-Meta-* headers, which are passed on to
// registries.
func metaHeaders(r *http.Request) http.Header {
	h := http.Header{}
	for k, v := range r.Header {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Meta-") {
			h[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
		}
	}
	return h
}
