package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestParseLinks(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []link
		err      bool
	}{
		{name: "empty", in: ""},
		{name: "distribution", in: `</v2/a/tags/list?last=b&n=2>; rel="next"`, want: []link{{target: "/v2/a/tags/list?last=b&n=2", next: true}}},
		{name: "unquoted rel", in: `</x>; rel=next`, want: []link{{target: "/x", next: true}}},
		{name: "rel list", in: `</x>; rel="prev next"`, want: []link{{target: "/x", next: true}}},
		{name: "rel case", in: `</x>; REL="Next"`, want: []link{{target: "/x", next: true}}},
		{name: "prev then next", in: `</p>; rel="prev", </n>; rel="next"`, want: []link{{target: "/p"}, {target: "/n", next: true}}},
		{name: "comma in quoted param", in: `</x>; title="a, b"; rel="next"`, want: []link{{target: "/x", next: true}}},
		{name: "comma in target", in: `</x?a=1,2>; rel="next"`, want: []link{{target: "/x?a=1,2", next: true}}},
		{name: "param without value", in: `</x>; foo; rel="next"`, want: []link{{target: "/x", next: true}}},
		{name: "no rel", in: `</x>`, want: []link{{target: "/x"}}},
		{name: "spaces", in: "  </x> ;  rel = \"next\"  ", want: []link{{target: "/x", next: true}}},
		{name: "no brackets", in: `/x; rel="next"`, err: true},
		{name: "unterminated target", in: `</x; rel="next"`, err: true},
		{name: "unterminated quote", in: `</x>; rel="next`, err: true},
		{name: "junk after target", in: `</x> rel="next"`, err: true},
		{name: "too many", in: strings.Repeat(`</x>; rel="prev", `, maxLinks+1), err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLinks(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if !tc.err && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNextLink(t *testing.T) {
	base, _ := url.Parse("http://reg.example:5000/v2/a/tags/list?n=2")
	for _, tc := range []struct {
		name   string
		values []string
		want   string
		err    string
	}{
		{name: "none"},
		{name: "relative", values: []string{`</v2/a/tags/list?last=b&n=2>; rel="next"`}, want: "http://reg.example:5000/v2/a/tags/list?last=b&n=2"},
		{name: "absolute same host", values: []string{`<http://reg.example:5000/v2/a/tags/list?last=c>; rel="next"`}, want: "http://reg.example:5000/v2/a/tags/list?last=c"},
		{name: "second header", values: []string{`</p>; rel="prev"`, `</n>; rel="next"`}, want: "http://reg.example:5000/n"},
		{name: "only prev", values: []string{`</p>; rel="prev"`}},
		{name: "other host", values: []string{`<http://evil.example/v2/a/tags/list>; rel="next"`}, err: "another registry"},
		{name: "other port", values: []string{`<http://reg.example:5001/x>; rel="next"`}, err: "another registry"},
		{name: "downgrade", values: []string{`<https://reg.example:5000/x>; rel="next"`}, err: "another registry"},
		{name: "malformed", values: []string{`next`}, err: "malformed"},
		{name: "bad url", values: []string{"<http://[::1>; rel=\"next\""}, err: "invalid Link target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nextLink(base, tc.values)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := ""
			if got != nil {
				s = got.String()
			}
			if s != tc.want {
				t.Errorf("got %q, want %q", s, tc.want)
			}
		})
	}
}

func FuzzParseLinks(f *testing.F) {
	for _, s := range []string{`</v2/a/tags/list?last=b&n=2>; rel="next"`, `</p>; rel="prev", </n>; rel=next`, `<x>; a="b,c"; rel`, `<`, `<>;`, `,,,`} {
		f.Add(s)
	}
	base, _ := url.Parse("https://reg.example/v2/a/tags/list")
	f.Fuzz(func(t *testing.T, s string) {
		links, err := parseLinks(s)
		if err != nil {
			return
		}
		if len(links) > maxLinks {
			t.Errorf("%d links", len(links))
		}
		u, err := nextLink(base, []string{s})
		if err == nil && u != nil && (u.Host != base.Host || u.Scheme != base.Scheme) {
			t.Errorf("next link %s leaves the registry", u)
		}
	})
}

func FuzzReferrersIndex(f *testing.F) {
	d := "sha256:" + strings.Repeat("a", 64)
	for _, s := range []string{
		`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + d + `","size":10,"artifactType":"x","annotations":{"a":"b"}}]}`,
		`{"manifests":[{"digest":"sha256:zz","size":1,"mediaType":"m"}]}`,
		`{"manifests":[{"digest":"` + d + `","size":-1,"mediaType":"m"}]}`,
		`{"manifests":null}`, `[]`, `null`,
	} {
		f.Add(s, "x", false)
	}
	f.Fuzz(func(t *testing.T, body, artifactType string, filtered bool) {
		var idx ocispec.Index
		if json.Unmarshal([]byte(body), &idx) != nil {
			return
		}
		refs, err := referrersFromIndex("fuzz", digest.Digest(d), idx.Manifests, ReferrerSourceAPI, artifactType, filtered)
		if err != nil {
			if !errors.Is(err, ErrUpstream) {
				t.Errorf("error not ErrUpstream: %v", err)
			}
			return
		}
		for _, r := range refs {
			if r.Descriptor.Digest.Validate() != nil || r.Descriptor.Size < 0 || r.Descriptor.Size > maxManifestSize || r.Descriptor.MediaType == "" {
				t.Errorf("accepted %+v", r.Descriptor)
			}
			if !filtered && artifactType != "" && r.Descriptor.ArtifactType != artifactType {
				t.Errorf("filter %q kept %q", artifactType, r.Descriptor.ArtifactType)
			}
		}
	})
}

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
