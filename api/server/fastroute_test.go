package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

// fastAndMux is the handler of New (with the fast path) and mux alone, on
// one backend that records each call (method, API version from the
// request's context, name, arguments), each with its own metrics observer.
type fastAndMux struct {
	fast, viaMux    http.Handler
	fastObs, muxObs *recordingAPIObserver
	calls           *[]string
	server          *Server // the one behind viaMux
}

// routeRecorder is a fakeBackend that records, for every backend method a
// route under /images/ calls, which method, at which API version (the
// route's "version" var, checked and put in the context by serveAPI) and
// with which name: a fast path that picked another handler or other vars
// than mux would call something else.
type routeRecorder struct {
	*fakeBackend
	calls *[]string
}

func (b routeRecorder) record(ctx context.Context, what string, args ...any) {
	parts := []string{what, apiVersionFrom(ctx)}
	for _, a := range args {
		parts = append(parts, fmt.Sprint(a))
	}
	*b.calls = append(*b.calls, strings.Join(parts, " "))
}

func (b routeRecorder) ImageInspect(ctx context.Context, n string, _ types.InspectOptions) (*types.ImageInspect, error) {
	b.record(ctx, "inspect", n)
	img := sampleInspect()
	img.RepoTags = []string{n}
	return img, nil
}

func (b routeRecorder) LookupRemote(ctx context.Context, n string, _ types.RemoteInspectOptions) (*types.RemoteImageInspect, error) {
	b.record(ctx, "remote", n)
	a := benchRemoteAnswer()
	a.RepoTags = []string{n}
	return a, nil
}

func (b routeRecorder) ImageHistory(ctx context.Context, n string, p *ocispec.Platform) ([]image.HistoryResponseItem, error) {
	b.record(ctx, "history", n, p)
	return []image.HistoryResponseItem{{ID: "sha256:a", Tags: []string{n}}}, nil
}

func (b routeRecorder) ImageAttestations(ctx context.Context, n string, o types.AttestationOptions, _ func(image.AttestationStatement) error) error {
	b.record(ctx, "attestations", n, o.Remote)
	return nil
}

func (b routeRecorder) ExportImage(ctx context.Context, names []string, ps []ocispec.Platform, w io.Writer) error {
	b.record(ctx, "export", names, ps)
	_, err := io.WriteString(w, "tar of "+strings.Join(names, ","))
	return err
}

func (b routeRecorder) TagImage(ctx context.Context, n string, ref reference.NamedTagged) error {
	b.record(ctx, "tag", n, ref)
	return nil
}

func (b routeRecorder) PushImage(ctx context.Context, o types.PushOptions, _ types.ProgressWriter) error {
	b.record(ctx, "push", o.Repo, o.Tag)
	return nil
}

func (b routeRecorder) CheckPlatform(ctx context.Context, n string, _ ocispec.Platform) error {
	b.record(ctx, "checkplatform", n)
	return nil
}

func (b routeRecorder) ImageDelete(ctx context.Context, n string, force, prune bool) ([]image.DeleteResponse, error) {
	b.record(ctx, "delete", n, force, prune)
	return []image.DeleteResponse{{Untagged: n}}, nil
}

func (b routeRecorder) ImageDeletePlatforms(ctx context.Context, n string, ps []ocispec.Platform, _, _ bool) ([]image.DeleteResponse, error) {
	b.record(ctx, "deleteplatforms", n, ps)
	return []image.DeleteResponse{{Untagged: n}}, nil
}

func (b routeRecorder) RemoteTags(ctx context.Context, n string, _ types.RemoteTagsOptions) (*types.RemoteTags, error) {
	b.record(ctx, "remotetags", n)
	return nil, errNI
}

func newFastAndMux() *fastAndMux {
	calls := &[]string{}
	b := routeRecorder{fakeBackend: &fakeBackend{}, calls: calls}
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
	c.server = s
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
// headers, body, backend call (which handler, with which name and API
// version) and metrics label, on every route shape it could be mistaken
// for: every /images/{name}/suffix route and DELETE /images/{name},
// versioned or not, beside the fixed /images/… routes that come before
// them; names with slashes, ports, digests, names that are themselves a
// suffix; encoded and odd characters, bad and out-of-range versions, paths
// mux redirects, and every method.
func TestFastRouteAgreesWithMux(t *testing.T) {
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
		"/v1.50/images/a%0Ab",
		"/v1.50/images/a%0Ab/tag?repo=b",
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
		"/v1.50/images/a/tag?repo=b&tag=x",
		"/v1.50/images/a/tag?repo=BAD",
		"/v1.50/images/a/tag",
		"/v1.50/images/a/push?tag=1",
		"/v1.50/images/a/push?tag=1&platform=%7B%22os%22%3A%22linux%22%7D",
		"/v1.50/images/a/get?platform=%7B%22os%22%3A%22linux%22%7D",
		"/v1.50/images/get?names=a&names=b",
		"/v1.50/images/a/history?platform=%7B%22os%22%3A%22linux%22%2C%22architecture%22%3A%22amd64%22%7D",
		"/v1.55/images/a/attestations?remote=1",
		"/v1.50/images/a?force=1&noprune=1",
		"/v1.50/images/a?platforms=%7B%22os%22%3A%22linux%22%7D",
		"/images/a:1?force=1",
		"/v1.50/images/",
		"/images/",
		"/v1.50/images",
		"/v1.50/wharf/images/a/tags",
		"/v1.50/wharf/images/check-remote",
		"/v1.50/distribution/a/json",
	}
	// Every prefix × name × suffix: the route shapes, and the fixed
	// /images/ paths (json, get, search, create, load, prune) whose routes
	// come first, as names and as suffixes.
	prefixes := []string{"", "/v1.50", "/v1.41", "/v1.55", "/v1.12", "/v9.99", "/v1.x", "/v", "/V1.50", "/x"}
	names := []string{"busybox", "busybox:latest", "reg.example.com:5000/team/app:1.4",
		"a@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "sha256:aaaa",
		"json", "get", "history", "tag", "push", "search", "create", "load", "prune", "attestations",
		"a/json", "a/tag", "a/get", "a/b/c", "", "a%2Fb", "a%0Ab", "..", "a/"}
	suffixes := []string{"/json", "/history", "/attestations", "/get", "/tag", "/push", "", "/",
		"/JSON", "/tags", "/search", "/create", "/load", "/prune", "/json/", "/x"}
	// One group of paths per prefix (the fixed ones first), compared in
	// parallel, each through a pair of servers of its own: the comparison
	// is the same, spread over the cores.
	groups := [][]string{paths}
	for _, pre := range prefixes {
		var g []string
		for _, n := range names {
			for _, suf := range suffixes {
				g = append(g, pre+"/images/"+n+suf, pre+"/images/"+n+suf+"?repo=b&tag=x&tag=y&names=c&remote=1&force=1")
			}
		}
		groups = append(groups, g)
	}
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete, http.MethodPut, "BREW"}
	var mu sync.Mutex
	fast := map[string]int{}
	compared := 0
	t.Run("groups", func(t *testing.T) {
		for i, g := range groups {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				c := newFastAndMux()
				table := newFastTable(c.server.routes(), c.server.serveAPI)
				for _, p := range g {
					for _, method := range methods {
						c.compare(t, func() *http.Request {
							r := httptest.NewRequest(method, p, strings.NewReader("{}"))
							r.Header.Set(authHeader, "e30=") // {}: push needs an auth
							return r
						})
						if st, _, _, ok := table.match(method, httptest.NewRequest(method, p, nil).URL.Path); ok {
							mu.Lock()
							fast[method+" "+st.template]++
							mu.Unlock()
						}
					}
				}
				mu.Lock()
				compared += len(g) * len(methods)
				mu.Unlock()
			})
		}
	})
	// The fast path was taken for each of its routes, not only declined.
	for _, rt := range (&Server{}).routes() {
		if strings.HasPrefix(rt.path, imageRoutePrefix) && fast[rt.method+" "+rt.path] < 200 {
			t.Errorf("%s %s: the fast path answered %d requests", rt.method, rt.path, fast[rt.method+" "+rt.path])
		}
	}
	t.Logf("%d requests compared; answered by the fast path: %v", compared, fast)
}

// Any method and path, as net/http hands them on decoded: the fast path and
// mux agree.
func FuzzFastRouteAgreesWithMux(f *testing.F) {
	for _, p := range []string{"/v1.50/images/a/json", "/images/a/b:1/json", "/v1.50/images//json", "/v1.x/images/a/json",
		"/v1.50/images/a\nb/json", "/v1.50/images/a/../json", "/v1.50/images/json/json", "images/a/json", "",
		"/v1.50/images/a/tag", "/images/a/push", "/v1.50/images/a", "/images/get", "/v1.55/images/a/attestations"} {
		for m := range 4 {
			f.Add(p, uint8(m))
		}
	}
	c := newFastAndMux()
	methods := []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodHead}
	f.Fuzz(func(t *testing.T, p string, m uint8) {
		method := methods[int(m)%len(methods)]
		c.compare(t, func() *http.Request {
			r := httptest.NewRequest(method, "/?repo=b", strings.NewReader("{}"))
			r.URL.Path, r.URL.RawPath = p, ""
			r.Header.Set(authHeader, "e30=")
			return r
		})
	})
}

// fastTable.match on its own: which route it takes, with which vars, and
// that it declines the rest.
func TestFastTableMatch(t *testing.T) {
	s := &Server{}
	table := newFastTable(s.routes(), func(apiFunc) func(http.ResponseWriter, *http.Request, map[string]string) {
		return func(http.ResponseWriter, *http.Request, map[string]string) {}
	})
	for _, tc := range []struct {
		method, path            string
		template, version, name string
		ok                      bool
	}{
		{"GET", "/v1.50/images/busybox/json", "/images/{name:.*}/json", "1.50", "busybox", true},
		{"GET", "/images/busybox/json", "/images/{name:.*}/json", "", "busybox", true},
		{"GET", "/v1.50/images/reg:5000/a/b:1/json", "/images/{name:.*}/json", "1.50", "reg:5000/a/b:1", true},
		{"GET", "/v1.50/images/a/json/json", "/images/{name:.*}/json", "1.50", "a/json", true},
		{"GET", "/v1.50/images/a/history", "/images/{name:.*}/history", "1.50", "a", true},
		{"GET", "/v1.50/images/a/get/history", "/images/{name:.*}/history", "1.50", "a/get", true},
		{"GET", "/images/a/attestations", "/images/{name:.*}/attestations", "", "a", true},
		{"GET", "/v1.50/images/a/get", "/images/{name:.*}/get", "1.50", "a", true},
		{"GET", "/v1.50/images/get/get", "/images/{name:.*}/get", "1.50", "get", true},
		{"POST", "/v1.50/images/a/tag", "/images/{name:.*}/tag", "1.50", "a", true},
		{"POST", "/images/reg:5000/a:1/tag", "/images/{name:.*}/tag", "", "reg:5000/a:1", true},
		{"POST", "/v1.50/images/a/push", "/images/{name:.*}/push", "1.50", "a", true},
		{"DELETE", "/v1.50/images/a", "/images/{name:.*}", "1.50", "a", true},
		{"DELETE", "/v1.50/images/a/json", "/images/{name:.*}", "1.50", "a/json", true},
		{"DELETE", "/images/json", "/images/{name:.*}", "", "json", true},
		{"DELETE", "/v1.50/images/", "/images/{name:.*}", "1.50", "", true},
		// the fixed routes before them are mux's
		{"GET", "/v1.50/images/json", "", "", "", false},
		{"GET", "/images/get", "", "", "", false},
		{"GET", "/v1.50/images/search", "", "", "", false},
		{"POST", "/v1.50/images/create", "", "", "", false},
		{"POST", "/images/load", "", "", "", false},
		{"POST", "/v1.50/images/prune", "", "", "", false},
		// paths mux redirects, bad versions, newlines, other methods
		{"GET", "/v1.50/images//json", "", "", "", false},
		{"GET", "/v1.50/images/a/../b/json", "", "", "", false},
		{"GET", "/v1.50/images/a/json/", "", "", "", false},
		{"GET", "/v1.x/images/a/json", "", "", "", false},
		{"GET", "/v/images/a/json", "", "", "", false},
		{"GET", "/v1.50/images/a\nb/json", "", "", "", false},
		{"DELETE", "/v1.50/images/a\nb", "", "", "", false},
		{"GET", "/v1.50/images/a/tag", "", "", "", false},
		{"POST", "/v1.50/images/a/json", "", "", "", false},
		{"HEAD", "/v1.50/images/a/json", "", "", "", false},
		{"PUT", "/v1.50/images/a", "", "", "", false},
		{"GET", "/v1.50/wharf/images/a/tags", "", "", "", false},
		{"GET", "", "", "", "", false},
	} {
		st, v, n, ok := table.match(tc.method, tc.path)
		template := ""
		if st != nil {
			template = st.template
		}
		if template != tc.template || v != tc.version || n != tc.name || ok != tc.ok {
			t.Errorf("match(%s %q) = %q, %q, %q, %v; want %q, %q, %q, %v", tc.method, tc.path, template, v, n, ok, tc.template, tc.version, tc.name, tc.ok)
		}
	}
}

// A route added before the image routes whose path could match an image
// path is never shadowed: a fixed path equal to the request's, or a path
// with other variables whose fixed beginning the request has, sends the
// request to mux. (No route of routes() overlaps them today; this holds
// the rule for the next one.)
func TestFastTableLeavesEarlierRoutesToMux(t *testing.T) {
	nop := func(http.ResponseWriter, *http.Request, map[string]string) error { return nil }
	serve := func(apiFunc) func(http.ResponseWriter, *http.Request, map[string]string) {
		return func(http.ResponseWriter, *http.Request, map[string]string) {}
	}
	type want struct {
		path string
		ok   bool
	}
	for _, tc := range []struct {
		name   string
		routes []route
		want   []want
	}{
		{"a fixed path first", []route{
			{http.MethodGet, "/images/special/json", nop},
			{http.MethodGet, "/images/{name:.*}/json", nop},
		}, []want{
			{"/v1.50/images/special/json", false},
			{"/images/special/json", false},
			{"/images/other/json", true},
			{"/v1.50/images/special/x/json", true},
		}},
		{"a path with another variable first", []route{
			{http.MethodGet, "/images/special/json", nop},
			{http.MethodGet, "/images/{id:[0-9]+}/history", nop},
			{http.MethodGet, "/images/{name:.*}/json", nop},
			{http.MethodGet, "/images/{name:.*}/history", nop},
		}, []want{
			{"/v1.50/images/special/json", false},
			{"/images/special/json", false},
			{"/images/other/json", false},
			{"/v1.50/images/1/history", false},
			// the {id} route is only known by its beginning, /images/, so
			// every GET under /images/ is mux's: slower, never wrong
			{"/images/a/history", false},
			{"/v1.50/images/a/json", false},
		}},
	} {
		table := newFastTable(tc.routes, serve)
		for _, w := range tc.want {
			if _, _, _, ok := table.match(http.MethodGet, w.path); ok != w.ok {
				t.Errorf("%s: match(%q) = %v, want %v", tc.name, w.path, ok, w.ok)
			}
		}
	}
}
