package server

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/distribution/reference"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

// Hot-path benchmark for bench/ (issue 5): GET /images/NAME/json?remote=1
// through the router, middleware and version gating, with a backend that
// answers from memory as the registry cache does for a warm digest. The
// floor is encoding the same answer and writing it to the recorder.

func benchRemoteAnswer() *types.RemoteImageInspect {
	return &types.RemoteImageInspect{
		ImageInspect: *sampleInspect(), Registry: "registry.example.com:5000", Digest: "sha256:dddd", Tag: "1.4",
		PlatformManifestDigest: "sha256:cccc", ManifestAnnotations: map[string]string{"org.opencontainers.image.created": "2025-03-14T15:09:26Z"},
	}
}

func BenchmarkHotRemoteInspectHandler(b *testing.B) {
	answer := benchRemoteAnswer()
	be := &fakeBackend{lookupRemote: func(string, types.RemoteInspectOptions) (*types.RemoteImageInspect, error) {
		cp := *answer
		return &cp, nil
	}}
	log := logrus.New()
	log.SetOutput(io.Discard)
	h := New(be, Options{ServerVersion: "bench", Logger: logrus.NewEntry(log)})
	auth := base64.URLEncoding.EncodeToString([]byte(`{"username":"u","password":"p","serveraddress":"registry.example.com:5000"}`))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/v1.50/images/registry.example.com:5000/team/app:1.4/json?remote=1", nil)
		req.Header.Set("X-Registry-Auth", auth)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

func BenchmarkHotRemoteInspectHandlerFloor(b *testing.B) {
	answer := benchRemoteAnswer()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/v1.50/images/registry.example.com:5000/team/app:1.4/json?remote=1", nil)
		rec := httptest.NewRecorder()
		body, err := json.Marshal(answer)
		if err != nil {
			b.Fatal(err)
		}
		_ = req
		rec.Header().Set("Content-Type", "application/json")
		rec.WriteHeader(http.StatusOK)
		rec.Write(body)
	}
}

// BenchmarkTagRoute is POST /images/NAME/tag (bench case 11's 64 concurrent
// tags) through the whole handler to a backend that does nothing: the
// routing, the version gate and the one parse of repo and tag. "mux" is
// the same request with the fast path of fastroute.go left out, the route
// found by mux's regular expressions (~30 routes' before this one).
func BenchmarkTagRoute(b *testing.B) {
	be := &fakeBackend{tag: func(string, reference.NamedTagged) error { return nil }}
	log := logrus.New()
	log.SetOutput(io.Discard)
	opts := Options{ServerVersion: "bench", APIVersion: types.DefaultAPIVersion, MinAPIVersion: types.DefaultMinAPIVersion, Logger: logrus.NewEntry(log)}
	s := &Server{backend: be, opts: opts, log: opts.Logger}
	m := s.router()
	for _, h := range []struct {
		name string
		h    http.Handler
	}{{"fast", New(be, opts)}, {"mux", s.logRequests(m)}} {
		b.Run(h.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1.50/images/registry.example.com:5000/team/app:1.4/tag?repo=registry.example.com%3A5000%2Fteam%2Fapp2&tag=1.5", nil)
				rec := httptest.NewRecorder()
				h.h.ServeHTTP(rec, req)
				if rec.Code != http.StatusCreated {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
