package syncyaml

import (
	"reflect"
	"strings"
	"testing"

	"github.com/distribution/reference"

	"github.com/wharfproject/wharf/client"
)

// skopeoExample is the example of skopeo-sync(1), as printed there.
const skopeoExample = `docker.io:
    images:
        busybox: []
        redis:
            - "1.0"
            - "2.0"
            - "sha256:0000000000000000000000000000000000000000000000000000000000000000"
    images-by-tag-regex:
        nginx: ^1\.13\.[12]-alpine-perl$
    images-by-semver:
        alpine: ">= 3.12.0"
    credentials:
        username: john
        password: this is a secret
    tls-verify: true
    cert-dir: /home/john/certs
quay.io:
    tls-verify: false
    images:
        coreos/etcd:
            - latest
`

func TestParseSyncYAML(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       string
		want     []client.SyncSource
		warnings []string // substrings, in order
		err      string
	}{
		{
			name: "skopeo's example",
			in:   skopeoExample,
			want: []client.SyncSource{
				{Repository: "docker.io/busybox"},
				{Repository: "docker.io/redis", Tags: []string{"1.0", "2.0"}},
				{Repository: "docker.io/nginx", TagRegex: `^1\.13\.[12]-alpine-perl$`},
				{Repository: "docker.io/alpine", Semver: ">= 3.12.0"},
				{Repository: "quay.io/coreos/etcd", Tags: []string{"latest"}},
			},
			warnings: []string{"credentials in the YAML are ignored", "cert-dir is ignored", "is a digest", "tls-verify: false"},
		},
		{name: "unknown key", in: "r.example:\n  imagez: {}\n", err: "imagez"},
		{name: "empty", in: "", err: "no registry"},
		{name: "no images", in: "r.example:\n  tls-verify: true\n", err: "no image"},
		{name: "bad host", in: "r.example/x:\n  images: {a: []}\n", err: "not a registry host"},
		{name: "tag in name", in: "r.example:\n  images: {a:1: []}\n", err: "put tags in the list"},
		{name: "bad repository", in: "r.example:\n  images: {A: []}\n", err: "repository"},
		{name: "not a map", in: "- a\n- b\n", err: "parse the YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings, err := Parse([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("sources =\n%+v\nwant\n%+v", got, tc.want)
			}
			if len(warnings) != len(tc.warnings) {
				t.Fatalf("warnings = %q, want %d", warnings, len(tc.warnings))
			}
			for i, w := range tc.warnings {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %d = %q, want one containing %q", i, warnings[i], w)
				}
			}
		})
	}
}

// FuzzParseSyncYAML: no panics; every source accepted is a valid name
// without tag or digest, and a file over the cap is refused.
func FuzzParseSyncYAML(f *testing.F) {
	for _, s := range []string{skopeoExample, "a.example:\n  images: {x: [\"1\"]}\n", "&a [*a, *a]", "a.example: {images-by-semver: {x: \"~1\"}}", "{"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sources, _, err := Parse(b)
		if err != nil {
			return
		}
		if len(b) > MaxSize || len(sources) == 0 {
			t.Fatalf("accepted %d bytes with %d sources", len(b), len(sources))
		}
		for _, s := range sources {
			n, err := reference.ParseNormalizedNamed(s.Repository)
			if err != nil {
				t.Fatalf("accepted %q: %v", s.Repository, err)
			}
			if _, ok := n.(reference.Tagged); ok {
				t.Fatalf("accepted a tagged name %q", s.Repository)
			}
		}
	})
}
