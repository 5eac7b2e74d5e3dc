package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

// fastAndMux is the handler of New (with the fast path) and mux alone, on
// one fake backend that records the names it is asked for, each with its
// own metrics observer.
type fastAndMux struct {
	fast, viaMux    http.Handler
	fastObs, muxObs *recordingAPIObserver
	calls           *[]string
}

func newFastAndMux() *fastAndMux {
	calls := &[]string{}
	b := &fakeBackend{
		inspect: func(name string, _ types.InspectOptions) (*types.ImageInspect, error) {
			*calls = append(*calls, "local "+name)
			img := sampleInspect()
			img.RepoTags = []string{name}
			return img, nil
		},
		lookupRemote: func(name string, _ types.RemoteInspectOptions) (*types.RemoteImageInspect, error) {
			*calls = append(*calls, "remote "+name)
			a := benchRemoteAnswer()
			a.RepoTags = []string{name}
			return a, nil
		},
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	opts := Options{ServerVersion: "1.0-test", APIVersion: types.DefaultAPIVersion, MinAPIVersion: types.DefaultMinAPIVersion, Logger: logrus.NewEntry(log)}
	c := &fastAndMux{fastObs: &recordingAPIObserver{}, muxObs: &recordingAPIObserver{}, calls: calls}
	fastOpts := opts
	fastOpts.Observer = c.fastObs
	c.fast = New(b, fastOpts)
	muxOpts := opts
	muxOpts.Observer = c.muxObs
	s := &Server{backend: b, opts: muxOpts, log: muxOpts.Logger}
	m := s.router()
	c.viaMux = s.logRequests(s.observeRequests(m, m))
	return c
}

// compare serves req (made twice by newReq) through both and reports every
// difference: status, headers, body, backend calls, metrics label.
func (c *fastAndMux) compare(t *testing.T, newReq func() *http.Request) {
	t.Helper()
	*c.calls = nil
	c.fastObs.seen, c.muxObs.seen = nil, nil
	req := newReq()
	fr := httptest.NewRecorder()
	c.fast.ServeHTTP(fr, req)
	fastCalls := *c.calls
	*c.calls = nil
	mr := httptest.NewRecorder()
	c.viaMux.ServeHTTP(mr, newReq())
	what := req.Method + " " + req.URL.Path + "?" + req.URL.RawQuery
	if fr.Code != mr.Code || fr.Body.String() != mr.Body.String() {
		t.Errorf("%q: fast %d %q, mux %d %q", what, fr.Code, fr.Body, mr.Code, mr.Body)
	}
	for _, h := range []string{"Content-Type", "Location", "Api-Version", "Server", "Ostype"} {
		if fr.Header().Get(h) != mr.Header().Get(h) {
			t.Errorf("%q: header %s fast %q, mux %q", what, h, fr.Header().Get(h), mr.Header().Get(h))
		}
	}
	if !slices.Equal(fastCalls, *c.calls) {
		t.Errorf("%q: backend calls fast %q, mux %q", what, fastCalls, *c.calls)
	}
	if len(c.fastObs.seen) != 1 || len(c.muxObs.seen) != 1 || c.fastObs.seen[0] != c.muxObs.seen[0] {
		t.Errorf("%q: observed fast %v, mux %v", what, c.fastObs.seen, c.muxObs.seen)
	}
}

// The fast path of fastroute.go answers exactly as mux does: same status,
// headers, body, backend call and metrics label, on every route shape it
// could be mistaken for — versioned or not, names with slashes, ports,
// digests, encoded and odd characters, bad and out-of-range versions,
// paths mux redirects, and methods other than GET.
func TestFastRouteAgreesWithMux(t *testing.T) {
	c := newFastAndMux()
	paths := []string{
		"/v1.50/images/busybox/json",
		"/images/busybox/json",
		"/v1.50/images/busybox:latest/json?remote=1",
		"/v1.50/images/registry.example.com:5000/team/app:1.4/json",
		"/images/registry.example.com:5000/team/app:1.4/json?remote=1",
		"/v1.50/images/example.com/a@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/json",
		"/v1.50/images/sha256:aaaa/json",
		"/v1.50/images/a%2Fb/json",
		"/v1.50/images/a%20b/json",
		"/v1.50/images/a%0Ab/json",
		"/v1.50/images/a%FFb/json",
		"/v1.50/images/a%2F..%2Fb/json",
		"/v1.50/images/%2Fjson",
		"/v1.50/images//json",
		"/v1.50/images/a/../b/json",
		"/v1.50/images/./a/json",
		"/v1.50//images/a/json",
		"/v1.50/images/a/json/",
		"/v1.50/images/a/json/json",
		"/v1.50/images/a/json/b/json",
		"/v1.50/images/json",
		"/images/json",
		"/v1.50/images/json/json",
		"/v1.50/images/a/JSON",
		"/v1.50/images/a/history",
		"/v1.50/images/a",
		"/v/images/a/json",
		"/v1.x/images/a/json",
		"/V1.50/images/a/json",
		"/v1.50./images/a/json",
		"/v..../images/a/json",
		"/v1.12/images/a/json",
		"/v9.99/images/a/json",
		"/v1.24/images/a/json",
		"/v1.44/images/a/json",
		"/v1.50/Images/a/json",
		"/v1.50images/a/json",
		"/x/v1.50/images/a/json",
		"/images/a/json?remote=1&platform=linux%2Farm64",
		"/images/a/json?remote=bogus",
		"/v1.50/images/a/json?remote=1&manifests=1",
	}
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete, "BREW"}
	for _, p := range paths {
		for _, method := range methods {
			c.compare(t, func() *http.Request { return httptest.NewRequest(method, p, nil) })
		}
	}
}

// Any path, as net/http hands it on decoded: the fast path and mux agree.
func FuzzFastRouteAgreesWithMux(f *testing.F) {
	for _, p := range []string{"/v1.50/images/a/json", "/images/a/b:1/json", "/v1.50/images//json", "/v1.x/images/a/json",
		"/v1.50/images/a\nb/json", "/v1.50/images/a/../json", "/v1.50/images/json/json", "images/a/json", ""} {
		f.Add(p, true)
	}
	c := newFastAndMux()
	f.Fuzz(func(t *testing.T, p string, get bool) {
		method := http.MethodGet
		if !get {
			method = http.MethodHead
		}
		c.compare(t, func() *http.Request {
			r := httptest.NewRequest(method, "/", nil)
			r.URL.Path, r.URL.RawPath = p, ""
			return r
		})
	})
}

// matchImageJSON on its own: what it takes, and that it declines the rest.
func TestMatchImageJSON(t *testing.T) {
	for _, tc := range []struct {
		path, version, name string
		ok                  bool
	}{
		{"/v1.50/images/busybox/json", "1.50", "busybox", true},
		{"/images/busybox/json", "", "busybox", true},
		{"/v1.50/images/reg:5000/a/b:1/json", "1.50", "reg:5000/a/b:1", true},
		{"/v1.50/images/a/json/json", "1.50", "a/json", true},
		{"/v1.50/images/json", "", "", false},
		{"/v1.50/images//json", "", "", false},
		{"/v1.50/images/a/../b/json", "", "", false},
		{"/v1.50/images/a/json/", "", "", false},
		{"/v1.x/images/a/json", "", "", false},
		{"/v/images/a/json", "", "", false},
		{"/v1.50/images/a\nb/json", "", "", false},
		{"/v1.50/images/a/history", "", "", false},
		{"", "", "", false},
	} {
		v, n, ok := matchImageJSON(tc.path)
		if v != tc.version || n != tc.name || ok != tc.ok {
			t.Errorf("matchImageJSON(%q) = %q, %q, %v; want %q, %q, %v", tc.path, v, n, ok, tc.version, tc.name, tc.ok)
		}
	}
}
