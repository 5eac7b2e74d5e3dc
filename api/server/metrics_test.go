package server

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/image"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

type apiRecord struct {
	route, method string
	status        int
}

type recordingAPIObserver struct {
	mu   sync.Mutex
	seen []apiRecord
}

func (o *recordingAPIObserver) APIRequest(route, method string, status int, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, apiRecord{route, method, status})
}

// The route label is the route's template, the same with and without the
// version prefix, never the raw path or an unknown method: a client must
// not be able to create label values.
func TestObserverLabelsRequestsByRouteTemplate(t *testing.T) {
	b := &fakeBackend{
		images: func(types.ImageListOptions) ([]image.Summary, error) { return []image.Summary{}, nil },
	}
	obs := &recordingAPIObserver{}
	h := New(b, Options{ServerVersion: "1.0-test", Logger: logrus.NewEntry(logrus.New()), Observer: obs})
	for _, tc := range []struct {
		method, path string
		want         apiRecord
	}{
		{"GET", "/images/json", apiRecord{"/images/json", "GET", 200}},
		{"GET", "/v1.45/images/json", apiRecord{"/images/json", "GET", 200}},
		{"GET", "/v1.45/images/busybox:latest/json", apiRecord{"/images/{name:.*}/json", "GET", 501}},
		{"GET", "/images/example.com/a/b/c:1/json?remote=1", apiRecord{"/images/{name:.*}/json", "GET", 501}},
		{"DELETE", "/images/some-image", apiRecord{"/images/{name:.*}", "DELETE", 501}},
		{"HEAD", "/_ping", apiRecord{"/_ping", "HEAD", 200}},
		{"GET", "/no/such/path/123", apiRecord{RouteUnmatched, "GET", 404}},
		{"GET", "/v1.45/no/such/path/456", apiRecord{RouteUnmatched, "GET", 404}},
		{"BREW", "/v1.45/images/json", apiRecord{RouteUnmatched, MethodOther, 404}},
		{"PUT", "/images/json", apiRecord{RouteUnmatched, "PUT", 404}},
	} {
		obs.seen = nil
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if len(obs.seen) != 1 || obs.seen[0] != tc.want {
			t.Errorf("%s %s (answered %d): observed %+v, want %+v", tc.method, tc.path, rec.Code, obs.seen, tc.want)
		}
	}
}

func TestRouteOfTemplate(t *testing.T) {
	for in, want := range map[string]string{
		"":                                   RouteUnmatched,
		versionMatcher + "/{path:.*}":        RouteUnmatched,
		versionMatcher + "/images/{name:.*}": "/images/{name:.*}",
		"/images/{name:.*}":                  "/images/{name:.*}",
		"/_ping":                             "/_ping",
	} {
		if got := routeOfTemplate(in); got != want {
			t.Errorf("routeOfTemplate(%q) = %q, want %q", in, got, want)
		}
	}
}

// Without an Observer the router is served as it is.
func TestNoObserverNoWrapper(t *testing.T) {
	s := &Server{opts: Options{}}
	m := s.router()
	if h := s.observeRequests(m, m); h != http.Handler(m) {
		t.Errorf("observeRequests without an observer wrapped the router")
	}
}
