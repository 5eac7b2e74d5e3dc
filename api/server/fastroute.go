package server

import (
	"net/http"
	"path"
	"strings"

	"github.com/gorilla/mux"
)

const (
	// imageRoutePrefix begins every route the fast path answers: the
	// routes of routes() whose path is this and then a fixed suffix
	// (/json, /history, /tag, …, or none for DELETE /images/{name}).
	imageRoutePrefix = "/images/{name:.*}"
	// imagePathPrefix is what a request's path begins with for them.
	imagePathPrefix    = "/images/"
	versionPathPrefix  = "/v"
	versionPathAllowed = "0123456789."
)

// fastStep is one route of routes() for one method, in mux's order. Either
// the fast path answers it (serve set: /images/{name:.*}suffix), or it must
// not take a path mux would give that route first: a fixed path (literal),
// or a path with variables only by its fixed beginning (prefix).
type fastStep struct {
	suffix, template string // template is the route's path as routes() has it
	serve            func(http.ResponseWriter, *http.Request, map[string]string)
	literal, prefix  string
}

// fastTable is routes() for the fast path, by method, in mux's order.
type fastTable map[string][]fastStep

// newFastTable reads the routes the fast path answers out of rts, so a
// route added there is either answered the same way or left to mux,
// never shadowed: every route before an image route is kept as a step
// that sends the paths it could match to mux.
func newFastTable(rts []route, serve func(apiFunc) func(http.ResponseWriter, *http.Request, map[string]string)) fastTable {
	t := fastTable{}
	for _, rt := range rts {
		var st fastStep
		i := strings.IndexByte(rt.path, '{')
		switch {
		case i < 0:
			st.literal = rt.path
		case strings.HasPrefix(rt.path, imageRoutePrefix) && !strings.ContainsAny(rt.path[len(imageRoutePrefix):], "{}"):
			st.suffix, st.template, st.serve = rt.path[len(imageRoutePrefix):], rt.path, serve(rt.h)
		default:
			st.prefix = rt.path[:i]
		}
		t[rt.method] = append(t[rt.method], st)
	}
	return t
}

// fastRoutes answers every /images/{name}/… route of routes() (GET json,
// history, attestations, get; POST tag, push; DELETE /images/{name}) and
// their /v{version} forms without mux: mux tries each route's regular
// expression in order, ~35 of them before these, which was ~9 % of wharfd's
// CPU under bench case 2 and ~7 % under 64 concurrent tags (bench case
// 11). Every other request, and every path this one
// is not sure of (one mux redirects, a bad version, a name with a newline),
// goes to m unchanged. The answer is the same as m's, route template
// (metrics label) included: TestFastRouteAgreesWithMux compares the two on
// every route shape.
func (s *Server) fastRoutes(m *mux.Router) http.Handler {
	t := newFastTable(s.routes(), s.serveAPI)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st, version, name, ok := t.match(r.Method, r.URL.Path); ok {
			vars := map[string]string{"name": name}
			template := st.template
			if version != "" {
				vars["version"] = version
				template = versionMatcher + template
			}
			if l, ok := r.Context().Value(routeLabelKey{}).(*routeLabel); ok {
				l.template = template
			}
			st.serve(w, r, vars)
			return
		}
		m.ServeHTTP(w, r)
	})
}

// match is mux's match of method and p against the routes of t: the first
// route, in order, whose path and method both match, each route's
// ^/v(?P<version>[0-9.]+)<path>$ form before its ^<path>$ one, as router()
// registers them. ok is true only when that route is one of the image
// routes, for a path mux would not redirect; version is "" for the
// unversioned form.
func (t fastTable) match(method, p string) (st *fastStep, version, name string, ok bool) {
	steps := t[method]
	if len(steps) == 0 || muxCleanPath(p) != p {
		return nil, "", "", false // no route of this method, or mux answers 301 to the clean path
	}
	version, rest, versioned := splitVersion(p)
	for i := range steps {
		st := &steps[i]
		if versioned {
			if name, hit, fast := st.matchPath(rest); hit {
				if !fast {
					break
				}
				return st, version, name, true
			}
		}
		if name, hit, fast := st.matchPath(p); hit {
			if !fast {
				break
			}
			return st, "", name, true
		}
	}
	return nil, "", "", false
}

// matchPath is whether st's path matches q (hit), and if so whether the
// fast path answers it (fast) with name. A route it leaves to mux is a hit
// whenever it might match: mux then decides.
func (st *fastStep) matchPath(q string) (name string, hit, fast bool) {
	switch {
	case st.serve == nil && st.prefix != "":
		return "", strings.HasPrefix(q, st.prefix), false
	case st.serve == nil:
		return "", q == st.literal, false
	}
	if len(q) < len(imagePathPrefix)+len(st.suffix) || !strings.HasPrefix(q, imagePathPrefix) || !strings.HasSuffix(q, st.suffix) {
		return "", false, false
	}
	name = q[len(imagePathPrefix) : len(q)-len(st.suffix)]
	// mux's {name:.*}: "." matches any character but a newline; mux's
	// regexp would not match, and a later route might: mux decides.
	if strings.IndexByte(name, '\n') >= 0 {
		return "", true, false
	}
	return name, true, true
}

// splitVersion splits p = /v{version:[0-9.]+}/rest into version and /rest;
// versioned is false when p has no such prefix (then only the routes'
// unversioned forms can match it).
func splitVersion(p string) (version, rest string, versioned bool) {
	if !strings.HasPrefix(p, versionPathPrefix) {
		return "", "", false
	}
	after := p[len(versionPathPrefix):]
	i := strings.IndexByte(after, '/')
	if i <= 0 {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		if strings.IndexByte(versionPathAllowed, after[j]) < 0 {
			return "", "", false
		}
	}
	return after[:i], after[i:], true
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
