package registry

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/referrers"
)

// referrerDst is go-containerregistry's registry (without the referrers
// API unless api), optionally answering manifest PUTs with OCI-Subject,
// logging "METHOD path".
type referrerDst struct {
	mu   sync.Mutex
	reqs []string
	srv  *httptest.Server
}

// tagSchemaTag is the referrers tag schema's tag for a subject.
var tagSchemaTag = referrers.TagSchemaTag

func newReferrerDst(t *testing.T, api, subjectHeader bool) *referrerDst {
	d := &referrerDst{}
	h := ggcrregistry.New(ggcrregistry.WithReferrersSupport(api))
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.reqs = append(d.reqs, r.Method+" "+r.URL.Path)
		d.mu.Unlock()
		if subjectHeader && r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
			w.Header().Set("OCI-Subject", "sha256:whatever")
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *referrerDst) count(prefix string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return countPrefix(d.reqs, prefix)
}

func (d *referrerDst) repo(t *testing.T, s *Service) *Repository {
	t.Helper()
	return mustRepo(t, s, strings.TrimPrefix(d.srv.URL, "http://")+"/dst/app")
}

// manifestBlob is a manifest document and its descriptor.
func manifestBlob(t *testing.T, m ocispec.Manifest) (ocispec.Descriptor, []byte) {
	t.Helper()
	m.SchemaVersion, m.MediaType = 2, ocispec.MediaTypeImageManifest
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(b), Size: int64(len(b))}, b
}

func TestPushReferrer(t *testing.T) {
	ctx := context.Background()
	empty := ocispec.DescriptorEmptyJSON
	subjectDesc, subjectBytes := manifestBlob(t, ocispec.Manifest{Config: empty, Layers: []ocispec.Descriptor{}})
	referrer := func(kind string) (ocispec.Descriptor, []byte) {
		return manifestBlob(t, ocispec.Manifest{ArtifactType: "application/vnd.example." + kind, Config: empty, Layers: []ocispec.Descriptor{},
			Subject: &subjectDesc, Annotations: map[string]string{"org.example.kind": kind}})
	}
	schemaTag, _ := tagSchemaTag(subjectDesc.Digest)

	setup := func(t *testing.T, api, header bool) (*referrerDst, *Repository) {
		d := newReferrerDst(t, api, header)
		r := d.repo(t, testService(t, ServiceOptions{}))
		if err := r.PushManifest(ctx, subjectDesc, subjectBytes, "1"); err != nil {
			t.Fatal(err)
		}
		return d, r
	}

	t.Run("OCI-Subject: the registry indexed it", func(t *testing.T) {
		d, r := setup(t, true, true)
		desc, b := referrer("sig")
		how, err := r.PushReferrer(ctx, desc, b, "")
		if err != nil || how != ReferrerIndexedByRegistry {
			t.Fatalf("PushReferrer = %v, %v", how, err)
		}
		if n := d.count("GET /v2/dst/app/referrers/") + d.count("GET /v2/dst/app/manifests/"+schemaTag); n != 0 {
			t.Errorf("%d requests after an OCI-Subject answer, want none: %v", n, d.reqs)
		}
	})

	t.Run("the API without the header: it decides", func(t *testing.T) {
		d, r := setup(t, true, false)
		desc, b := referrer("sig")
		how, err := r.PushReferrer(ctx, desc, b, "")
		if err != nil || how != ReferrerIndexedByRegistry {
			t.Fatalf("PushReferrer = %v, %v", how, err)
		}
		if n := d.count("PUT /v2/dst/app/manifests/" + schemaTag); n != 0 {
			t.Errorf("tag-schema index written to a registry with the API: %v", d.reqs)
		}
	})

	t.Run("no API: the tag schema, once per referrer, API asked once", func(t *testing.T) {
		d, r := setup(t, false, false)
		var want []ocispec.Descriptor
		for _, kind := range []string{"sig", "sbom"} {
			desc, b := referrer(kind)
			how, err := r.PushReferrer(ctx, desc, b, "")
			if err != nil || how != ReferrerIndexedByTag {
				t.Fatalf("PushReferrer(%s) = %v, %v", kind, how, err)
			}
			want = append(want, ocispec.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size,
				ArtifactType: "application/vnd.example." + kind, Annotations: map[string]string{"org.example.kind": kind}})
			// Again: listed already, the index is not rewritten.
			if how, err := r.PushReferrer(ctx, desc, b, ""); err != nil || how != ReferrerNotIndexed {
				t.Fatalf("PushReferrer(%s) again = %v, %v", kind, how, err)
			}
		}
		if n := d.count("GET /v2/dst/app/referrers/"); n != 1 {
			t.Errorf("the API was asked %d times, want 1 (its 404 is remembered): %v", n, d.reqs)
		}
		if n := d.count("PUT /v2/dst/app/manifests/" + schemaTag); n != 2 {
			t.Errorf("the index was written %d times, want 2: %v", n, d.reqs)
		}
		_, body, err := r.getManifest(ctx, r.upstream, schemaTag, "")
		if err != nil {
			t.Fatal(err)
		}
		var idx ocispec.Index
		if err := json.Unmarshal(body, &idx); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(idx.Manifests)
		exp, _ := json.Marshal(want)
		if string(got) != string(exp) || idx.MediaType != ocispec.MediaTypeImageIndex {
			t.Errorf("index %s\nwant entries %s", body, exp)
		}
	})

	t.Run("the schema's tag holds something else: not overwritten", func(t *testing.T) {
		_, r := setup(t, false, false)
		if err := r.PushManifest(ctx, subjectDesc, subjectBytes, schemaTag); err != nil {
			t.Fatal(err)
		}
		desc, b := referrer("sig")
		if _, err := r.PushReferrer(ctx, desc, b, ""); !errdefs.IsConflict(err) {
			t.Fatalf("PushReferrer = %v, want a conflict", err)
		}
		if got, _, err := r.getManifest(ctx, r.upstream, schemaTag, ""); err != nil || got.Digest != subjectDesc.Digest {
			t.Errorf("tag %s now %v, %v", schemaTag, got.Digest, err)
		}
	})

	t.Run("content that is not its descriptor's is refused", func(t *testing.T) {
		_, r := setup(t, false, false)
		desc, b := referrer("sig")
		desc.Size--
		if _, err := r.PushReferrer(ctx, desc, b, ""); !errdefs.IsInvalidArgument(err) {
			t.Fatalf("PushReferrer = %v, want invalid argument", err)
		}
	})
}
