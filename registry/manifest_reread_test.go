package registry

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/hostile"
)

// A manifest or config body that breaks is read again: before, a manifest
// cut half-way failed the inspect or pull at once ("reading manifest …:
// unexpected EOF") where a layer cut the same way resumed, and the fault
// campaign's truncations of manifests were the failures it reported most.
func TestManifestAndConfigBodiesThatBreakAreReadAgain(t *testing.T) {
	config := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)
	for _, tc := range []struct {
		name   string
		breaks int // bodies broken before one is whole
		ok     bool
	}{
		{"one cut", 1, true},
		{"two cuts", manifestRereads, true},
		{"past the bound", manifestRereads + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeRegistry(t)
			cfg := f.putBlob(config)
			cfg.MediaType = ocispec.MediaTypeImageConfig
			m, _ := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, Config: cfg, Layers: []ocispec.Descriptor{}})
			dgst := f.putManifest("a/b", "v1", ocispec.MediaTypeImageManifest, m)
			var mu sync.Mutex
			gets := map[string]int{}
			f.hook = func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/manifests/") && !strings.Contains(r.URL.Path, "/blobs/") {
					return false
				}
				kind := "manifest"
				body := m
				if strings.Contains(r.URL.Path, "/blobs/") {
					kind, body = "config", config
				}
				mu.Lock()
				gets[kind]++
				n := gets[kind]
				mu.Unlock()
				if n > tc.breaks {
					return false // the registry's own answer
				}
				w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				if kind == "manifest" {
					w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
					w.Header().Set("Docker-Content-Digest", dgst.String())
				}
				w.Write(body[:len(body)/2])
				w.(http.Flusher).Flush()
				hostile.Reset(w)
				return true
			}
			s := testService(t, ServiceOptions{Timeout: 2 * time.Second})
			n, _ := reference.ParseNormalizedNamed(f.host() + "/a/b")
			repo, err := s.Repository(context.Background(), n, Credentials{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := repo.FetchManifest(context.Background(), ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: dgst, Size: int64(len(m))})
			if tc.ok != (err == nil) || tc.ok && string(got) != string(m) {
				t.Fatalf("manifest: %d GETs, err %v", gets["manifest"], err)
			}
			if !tc.ok {
				if !errdefs.IsUnavailable(err) {
					t.Errorf("manifest past the bound: %v, want Unavailable", err)
				}
				if gets["manifest"] != manifestRereads+1 {
					t.Errorf("manifest: %d GETs, want %d", gets["manifest"], manifestRereads+1)
				}
				return
			}
			b, err := repo.FetchConfig(context.Background(), cfg)
			if err != nil || string(b) != string(config) {
				t.Fatalf("config: %d GETs, err %v", gets["config"], err)
			}
		})
	}
}
