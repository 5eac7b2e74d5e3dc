package server

import (
	"net/http"
	"path"
	"strings"

	"github.com/gorilla/mux"
)

// Templates of the route the fast path answers, as mux names them (the
// metrics label is the same either way).
const (
	imageJSONPath      = "/images/{name:.*}/json"
	imageJSONTemplate  = versionMatcher + imageJSONPath
	imageJSONPrefix    = "/images/"
	imageJSONSuffix    = "/json"
	versionPathPrefix  = "/v"
	versionPathAllowed = "0123456789."
)

// fastRoutes answers GET /v{version}/images/{name}/json (and its unversioned
// form), the inspect every client and `--remote` sends, without mux: mux tries
// each route's regular expression in order, ~35 of them before this one, which
// was ~9 % of wharfd's CPU under bench case 2 (issue 14). Every other request,
// and every path this one is not sure of, goes to m unchanged. The answer is
// the same as m's: TestFastRouteAgreesWithMux compares the two on every route
// shape.
func (s *Server) fastRoutes(m *mux.Router) http.Handler {
	inspect := s.serveAPI(s.getImageByName)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			if version, name, ok := matchImageJSON(r.URL.Path); ok {
				vars := map[string]string{"name": name}
				template := imageJSONPath
				if version != "" {
					vars["version"] = version
					template = imageJSONTemplate
				}
				if l, ok := r.Context().Value(routeLabelKey{}).(*routeLabel); ok {
					l.template = template
				}
				inspect(w, r, vars)
				return
			}
		}
		m.ServeHTTP(w, r)
	})
}

// matchImageJSON is mux's match of p against
// ^/v(?P<version>[0-9.]+)/images/(?P<name>.*)/json$ and
// ^/images/(?P<name>.*)/json$, for a path mux would not redirect (one
// cleanPath leaves as it is); version is "" for the second. ok is false for
// anything else, which mux then decides.
func matchImageJSON(p string) (version, name string, ok bool) {
	if muxCleanPath(p) != p {
		return "", "", false // mux answers 301 to the clean path
	}
	rest := p
	if strings.HasPrefix(p, versionPathPrefix) {
		rest = p[len(versionPathPrefix):]
		i := strings.IndexByte(rest, '/')
		if i <= 0 {
			return "", "", false
		}
		version, rest = rest[:i], rest[i:]
		for j := 0; j < len(version); j++ {
			if strings.IndexByte(versionPathAllowed, version[j]) < 0 {
				return "", "", false
			}
		}
	}
	if !strings.HasPrefix(rest, imageJSONPrefix) {
		return "", "", false
	}
	rest = rest[len(imageJSONPrefix):]
	if !strings.HasSuffix(rest, imageJSONSuffix) {
		return "", "", false
	}
	name = rest[:len(rest)-len(imageJSONSuffix)]
	// mux's {name:.*}: "." matches any character but a newline.
	if strings.IndexByte(name, '\n') >= 0 {
		return "", "", false
	}
	return version, name, true
}

// muxCleanPath is gorilla/mux's cleanPath (v1.8.1, unexported): the path
// its router redirects to when it differs from the request's.
func muxCleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}
