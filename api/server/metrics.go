package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"
)

// Observer is told of every API request; the daemon's metrics implement
// it (Options.Observer). It runs on every request, so it must be cheap and
// safe for concurrent use.
type Observer interface {
	// APIRequest is one request: route is the route's template without
	// the /vN.NN prefix ("/images/{name:.*}/json"), or RouteUnmatched;
	// method is the request's (MethodOther beyond the standard ones); d
	// runs to the end of the response, streams included.
	APIRequest(route, method string, status int, d time.Duration)
}

// Labels of requests no route serves. A label made of the raw path or
// method would let any client create series without bound; the route
// templates and the standard methods are a fixed set.
const (
	RouteUnmatched = "unmatched"
	MethodOther    = "other"
)

// routeLabel carries the matched route's template from inside the router
// (where mux knows it) out to observeRequests.
type routeLabel struct{ template string }

type routeLabelKey struct{}

// observeRequests reports each request that h serves to the Observer; m is
// the router inside h, which names the matched route. With no Observer, h is
// returned as it is and costs nothing.
func (s *Server) observeRequests(m *mux.Router, h http.Handler) http.Handler {
	obs := s.opts.Observer
	if obs == nil {
		return h
	}
	m.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if l, ok := r.Context().Value(routeLabelKey{}).(*routeLabel); ok {
				if rt := mux.CurrentRoute(r); rt != nil {
					l.template, _ = rt.GetPathTemplate()
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		l := &routeLabel{}
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), routeLabelKey{}, l)))
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		route := routeOfTemplate(l.template)
		method := r.Method
		if route == RouteUnmatched {
			method = methodLabel(method)
		}
		obs.APIRequest(route, method, status, time.Since(start))
	})
}

// routeOfTemplate is the route label of a mux path template: the same for
// /v1.45/images/… and /images/…; RouteUnmatched for none and for the
// catch-all that answers unknown versioned paths.
func routeOfTemplate(t string) string {
	t = strings.TrimPrefix(t, versionMatcher)
	if t == "" || t == "/{path:.*}" {
		return RouteUnmatched
	}
	return t
}

// methodLabel keeps the standard methods and folds the rest (any token a
// client sends) into MethodOther.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return MethodOther
}
