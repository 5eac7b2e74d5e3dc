package server

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

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
