package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The referrers API: pages followed, the filter left to the registry when
// it says it applied it (OCI-Filters-Applied) and applied here otherwise,
// a 404 (no API) answered from the tag schema and remembered per host.
func TestReferrersAPIPagesFilterAndFallback(t *testing.T) {
	ctx := context.Background()
	f := newFakeRegistry(t)
	img, _ := f.addImage("r/app", "1.0", "linux", "amd64", "")
	entry := func(i int, at string) ocispec.Descriptor {
		return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString(fmt.Sprint(i)), Size: 100, ArtifactType: at}
	}
	pages := [][]ocispec.Descriptor{{entry(1, "sbom"), entry(2, "sig")}, {entry(3, "sbom")}}
	var filterApplied, noAPI bool
	var asked []string
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.Contains(r.URL.Path, "/referrers/") {
			return false
		}
		asked = append(asked, r.URL.RawQuery)
		if noAPI {
			http.NotFound(w, r)
			return true
		}
		p := 0
		if r.URL.Query().Get("page") == "2" {
			p = 1
		} else {
			w.Header().Set("Link", `</v2/r/app/referrers/`+img.Digest.String()+`?page=2>; rel="next"`)
		}
		var ms []ocispec.Descriptor
		for _, e := range pages[p] {
			if !filterApplied || e.ArtifactType == r.URL.Query().Get("artifactType") {
				ms = append(ms, e)
			}
		}
		if filterApplied {
			w.Header().Set("OCI-Filters-Applied", "artifactType")
		}
		w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
		_ = json.NewEncoder(w).Encode(ocispec.Index{Manifests: ms})
		return true
	}
	s := testService(t, ServiceOptions{})
	inspect := func(at string) []Referrer {
		t.Helper()
		img, err := s.Inspect(ctx, InspectRequest{Name: f.host() + "/r/app:1.0", Platform: linuxAmd64(), Referrers: &ReferrersOptions{ArtifactType: at}})
		if err != nil {
			t.Fatal(err)
		}
		return img.Referrers
	}
	digests := func(refs []Referrer) []int {
		var out []int
		for _, r := range refs {
			for i := 1; i <= 3; i++ {
				if r.Descriptor.Digest == digest.FromString(fmt.Sprint(i)) && r.Source == ReferrerSourceAPI && r.Subject == img.Digest {
					out = append(out, i)
				}
			}
		}
		return out
	}
	if got := digests(inspect("")); !reflect.DeepEqual(got, []int{1, 2, 3}) {
		t.Errorf("all pages: %v", got)
	}
	if got := digests(inspect("sbom")); !reflect.DeepEqual(got, []int{1, 3}) {
		t.Errorf("filtered here: %v", got)
	}
	filterApplied = true
	if got := digests(inspect("sig")); !reflect.DeepEqual(got, []int{2}) {
		t.Errorf("filtered by the registry: %v", got)
	}
	if q := asked[len(asked)-2]; q != "artifactType=sig" {
		t.Errorf("first page asked with %q", q)
	}

	// No API: the tag-schema index answers; the 404 is remembered.
	noAPI = true
	idx, _ := json.Marshal(ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{entry(9, "sbom")}})
	f.putManifest("r/app", "sha256-"+img.Digest.Encoded(), ocispec.MediaTypeImageIndex, idx)
	for range 2 {
		refs := inspect("")
		if len(refs) != 1 || refs[0].Source != ReferrerSourceTag || refs[0].Descriptor.Digest != digest.FromString("9") {
			t.Fatalf("tag schema: %+v", refs)
		}
	}
	n := len(asked)
	inspect("sbom")
	if len(asked) != n {
		t.Errorf("the API was asked again after a 404")
	}

	// A malformed answer is the registry's fault.
	f.putManifest("r/app", "sha256-"+img.Digest.Encoded(), ocispec.MediaTypeImageIndex, []byte(`{"manifests":[{"mediaType":"m","digest":"sha256:nope","size":1}]}`))
	_, err := s.Inspect(ctx, InspectRequest{Name: f.host() + "/r/app:1.0", Platform: linuxAmd64(), Referrers: &ReferrersOptions{}})
	if !errors.Is(err, ErrUpstream) || !strings.Contains(err.Error(), f.host()) {
		t.Errorf("malformed referrers index: %v", err)
	}
	if errdefs.IsNotFound(err) {
		t.Errorf("classified as not found: %v", err)
	}
}
