package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

func TestParsePlatformString(t *testing.T) {
	good := map[string]ocispec.Platform{
		"linux":          {OS: "linux", Architecture: runtime.GOARCH}, // as platforms.Parse fills it
		"linux/amd64":    {OS: "linux", Architecture: "amd64"},
		"Linux/X86_64":   {OS: "linux", Architecture: "amd64"},
		"linux/arm64/v8": {OS: "linux", Architecture: "arm64"},
		"linux/arm/v7":   {OS: "linux", Architecture: "arm", Variant: "v7"},
		"linux/ppc64le":  {OS: "linux", Architecture: "ppc64le"},
		"windows/amd64":  {OS: "windows", Architecture: "amd64"},
		"wasip1/wasm":    {OS: "wasip1", Architecture: "wasm"},
	}
	for in, want := range good {
		p, err := parsePlatformString(in)
		if err != nil || p.OS != want.OS || p.Architecture != want.Architecture || p.Variant != want.Variant {
			t.Errorf("%q: %+v, %v", in, p, err)
		}
	}
	for _, in := range []string{"../../etc", "..", ".", "linux/..", "linux/.", "linux/./amd64", "linux/amd64/..", "linux/amd64/../..",
		"linux/", "/amd64", "", "linux//v7", ".linux/amd64", "lin.ux/amd64", "linux/amd 64", "linux/amd64/v8/x", `linux\amd64`, "linux/mips64.el2", "linux/amd64%2f.."} {
		_, err := parsePlatformString(in)
		if !errdefs.IsInvalidArgument(err) {
			t.Errorf("%q accepted (%v)", in, err)
		}
	}
}

func TestDecodePlatformJSON(t *testing.T) {
	for _, in := range []string{
		`{"os":"linux","architecture":"arm64","variant":"v8"}`,
		`{"os":"windows","architecture":"amd64","os.version":"10.0.17763.1234","os.features":["win32k"]}`,
		`{"architecture":"amd64"}`,
	} {
		if _, err := decodePlatformJSON(in); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
	for _, in := range []string{
		`{"os":"../../etc","architecture":"amd64"}`,
		`{"os":"linux","architecture":".."}`,
		`{"os":"linux","architecture":"amd64","variant":"../x"}`,
		`{"os":"linux/amd64"}`,
		`{"os":"lin.ux","architecture":"amd64"}`,
		`{"os":"linux","architecture":"amd64","os.version":"1/2"}`,
		`{"os":"linux","architecture":"amd64","os.features":[".."]}`,
		`{"os":"","architecture":""}`,
		`not json`,
	} {
		if _, err := decodePlatformJSON(in); !errdefs.IsInvalidArgument(err) {
			t.Errorf("%s accepted (%v)", in, err)
		}
	}
}

// Every route that reads a platform answers 400 for a malformed one, before
// reaching the backend.
func TestMalformedPlatformIs400OnEveryRoute(t *testing.T) {
	reached := false
	b := &fakeBackend{
		inspect: func(string, types.InspectOptions) (*types.ImageInspect, error) {
			reached = true
			return sampleInspect(), nil
		},
		history: func(string, *ocispec.Platform) ([]image.HistoryResponseItem, error) { reached = true; return nil, nil },
		pull:    func(types.PullOptions, types.ProgressWriter) error { reached = true; return nil },
		importImage: func(io.Reader, types.ImportOptions, types.ProgressWriter) error {
			reached = true
			return nil
		},
	}
	js := url.QueryEscape(`{"os":"../../etc","architecture":"amd64"}`)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1.50/images/x/json?platform=" + js},
		{"GET", "/v1.50/images/x/json?remote=1&platform=" + js},
		{"GET", "/v1.50/images/x/history?platform=" + js},
		{"POST", "/v1.50/images/create?fromImage=x&tag=1&platform=..%2F..%2Fetc"},
		{"POST", "/v1.50/images/create?fromSrc=-&repo=x&platform=..%2F..%2Fetc"},
	} {
		reached = false
		rec := do(t, b, tc.method, tc.path, nil, nil)
		if rec.Code != 400 || reached {
			t.Errorf("%s %s: %d (backend reached: %v) %s", tc.method, tc.path, rec.Code, reached, rec.Body)
		}
	}
}

// TestPlatformsParam: every JSON platform value of save/load from the
// version on; none below it; a malformed one is InvalidArgument.
func TestPlatformsParam(t *testing.T) {
	amd, arm := `{"os":"linux","architecture":"amd64"}`, `{"os":"linux","architecture":"arm64","variant":"v8"}`
	cases := []struct {
		version string
		values  []string
		want    int
		bad     bool
	}{
		{"1.50", nil, 0, false},
		{"1.47", []string{amd}, 0, false},
		{"1.48", []string{amd}, 1, false},
		{"1.50", []string{amd, arm}, 2, false},
		{"1.52", []string{amd, "", arm}, 2, false},
		{"1.50", []string{"linux/amd64"}, 0, true},
		{"1.50", []string{amd, `{"os":`}, 0, true},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(http.MethodGet, "/images/get?"+url.Values{"platform": tc.values}.Encode(), nil)
		r = r.WithContext(context.WithValue(r.Context(), versionKey{}, tc.version))
		if err := r.ParseForm(); err != nil {
			t.Fatal(err)
		}
		ps, err := platformsParam(r, "1.48")
		if tc.bad {
			if !errdefs.IsInvalidArgument(err) {
				t.Errorf("%s %v: %v, want InvalidArgument", tc.version, tc.values, err)
			}
			continue
		}
		if err != nil || len(ps) != tc.want {
			t.Errorf("%s %v: %+v %v, want %d", tc.version, tc.values, ps, err, tc.want)
		}
	}
}
