package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

func TestDecodeSyncOptions(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		bad        bool
	}{
		{name: "options", body: `{"sources":[{"repository":"r.example/a","tags":["1"]}],"destination":"m.example/x","keep_going":true,"semver":">=1"}`},
		{name: "empty body", body: "", bad: true},
		{name: "not JSON", body: "{", bad: true},
		{name: "unknown field", body: `{"sources":[],"credentials":{"username":"u"}}`, bad: true},
		{name: "too large", body: `{"destination":"` + strings.Repeat("a", maxSyncBody) + `"}`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, syncPath, strings.NewReader(tc.body))
			opts, err := decodeSyncOptions(httptest.NewRecorder(), r)
			if tc.bad {
				if !errdefs.IsInvalidArgument(err) {
					t.Fatalf("err = %v, want invalid argument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(opts.Sources) != 1 || opts.Sources[0].Tags[0] != "1" || !opts.KeepGoing || opts.Auth != nil {
				t.Fatalf("decoded %+v", opts)
			}
		})
	}
}

// FuzzDecodeSyncOptions: any body is options or a 400, never a panic.
func FuzzDecodeSyncOptions(f *testing.F) {
	for _, s := range []string{`{}`, `{"sources":[{"repository":"a"}]}`, `{"latest":-1}`, `[`, `{"sources":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := httptest.NewRequest(http.MethodPost, syncPath, strings.NewReader(s))
		if _, err := decodeSyncOptions(httptest.NewRecorder(), r); err != nil && !errdefs.IsInvalidArgument(err) {
			t.Fatalf("err = %v", err)
		}
	})
}
