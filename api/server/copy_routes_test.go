package server

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

func TestDecodeRegistryConfig(t *testing.T) {
	enc := func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, header string
		want         map[string]string // key → username
		bad          bool
	}{
		{name: "absent"},
		{name: "two registries", header: enc(`{"a:5000":{"username":"ua"},"https://index.docker.io/v1/":{"username":"uh"}}`), want: map[string]string{"a:5000": "ua", "https://index.docker.io/v1/": "uh"}},
		{name: "standard base64", header: base64.StdEncoding.EncodeToString([]byte(`{"r":{"username":"u?>"}}`)), want: map[string]string{"r": "u?>"}},
		{name: "empty map", header: enc(`{}`), want: map[string]string{}},
		{name: "not base64", header: "!!!", bad: true},
		{name: "not a map", header: enc(`[1]`), bad: true},
		{name: "a single AuthConfig", header: enc(`{"username":"u"}`), bad: true},
		{name: "too large", header: strings.Repeat("A", maxAuthHeader+4), bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, copyPath, nil)
			if tc.header != "" {
				r.Header.Set(configHeader, tc.header)
			}
			m, err := decodeRegistryConfig(r)
			if tc.bad {
				if !errdefs.IsInvalidArgument(err) {
					t.Fatalf("err = %v, want invalid argument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(m) != len(tc.want) {
				t.Fatalf("got %d entries, want %d", len(m), len(tc.want))
			}
			for k, u := range tc.want {
				if m[k].Username != u {
					t.Errorf("%s: username %q, want %q", k, m[k].Username, u)
				}
			}
		})
	}
}

// FuzzDecodeRegistryConfig: any X-Registry-Config decodes to a map or to a
// 400, never panics.
func FuzzDecodeRegistryConfig(f *testing.F) {
	enc := func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }
	for _, s := range []string{"", enc(`{}`), enc(`{"a":{"username":"u"}}`), enc(`{"a":`), "!!!", enc(`{"a":{"auth":1}}`)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		r := httptest.NewRequest(http.MethodPost, copyPath, nil)
		r.Header.Set(configHeader, h)
		if _, err := decodeRegistryConfig(r); err != nil && !errdefs.IsInvalidArgument(err) {
			t.Errorf("unclassified error %v", err)
		}
	})
}
