package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

func TestImageAttestationsQuery(t *testing.T) {
	var got types.AttestationOptions
	var gotName string
	answer := []image.AttestationStatement(nil)
	b := &fakeBackend{attestations: func(n string, o types.AttestationOptions) ([]image.AttestationStatement, error) {
		gotName, got = n, o
		return answer, nil
	}}
	plat := url.QueryEscape(`{"os":"linux","architecture":"arm64"}`)
	tests := []struct {
		path string
		code int
		msg  string
		want types.AttestationOptions
	}{
		{"/v1.55/images/r/app:1/attestations", 200, "", types.AttestationOptions{}},
		{"/v1.55/images/r/app:1/attestations?statement=1&type=a&type=+b+&type=", 200, "",
			types.AttestationOptions{Statement: true, PredicateTypes: []string{"a", "b"}}},
		{"/v1.55/images/r/app:1/attestations?platform=" + plat + "&remote=1", 200, "",
			types.AttestationOptions{Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"}, Remote: true}},
		{"/v1.55/images/r/app:1/attestations?platform=" + plat + "&platform=" + plat, 400, "only one platform value is currently supported", types.AttestationOptions{}},
		{"/v1.55/images/r/app:1/attestations?platform=nope", 400, "", types.AttestationOptions{}},
	}
	for _, tc := range tests {
		got, gotName = types.AttestationOptions{}, ""
		rec := do(t, b, "GET", tc.path, nil, nil)
		if rec.Code != tc.code {
			t.Errorf("%s: %d %s", tc.path, rec.Code, rec.Body)
			continue
		}
		if tc.code != 200 {
			if tc.msg != "" && message(t, rec) != tc.msg {
				t.Errorf("%s: %q", tc.path, message(t, rec))
			}
			continue
		}
		if gotName != "r/app:1" {
			t.Errorf("%s: name %q", tc.path, gotName)
		}
		got.MetaHeaders = nil // metaHeaders' own (empty) map, at every call
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(tc.want)
		if string(gj) != string(wj) {
			t.Errorf("%s: options %s, want %s", tc.path, gj, wj)
		}
		// No attestations: an empty array, never null.
		if body := rec.Body.String(); body != "[]\n" && body != "[]" {
			t.Errorf("%s: body %q", tc.path, body)
		}
	}

	// The answer in swagger's shape: Descriptor, PredicateType, Statement
	// only when read.
	raw := json.RawMessage(`{"_type":"https://in-toto.io/Statement/v0.1"}`)
	answer = []image.AttestationStatement{
		{Descriptor: ocispec.Descriptor{MediaType: "application/vnd.in-toto+json", Digest: digest.FromString("x"), Size: 1}, PredicateType: "https://spdx.dev/Document"},
		{Descriptor: ocispec.Descriptor{MediaType: "application/vnd.in-toto+json", Digest: digest.FromString("y"), Size: 2}, PredicateType: "https://slsa.dev/provenance/v0.2", Statement: &raw},
	}
	rec := do(t, b, "GET", "/images/x/attestations", nil, nil)
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &items); err != nil || len(items) != 2 {
		t.Fatalf("%s %v", rec.Body, err)
	}
	if _, ok := items[0]["Statement"]; ok {
		t.Errorf("Statement without statement=1: %s", rec.Body)
	}
	if string(items[1]["Statement"]) != string(raw) || string(items[1]["PredicateType"]) != `"https://slsa.dev/provenance/v0.2"` {
		t.Errorf("item %s", rec.Body)
	}
}

// The answer is written a statement at a time, and its bytes are those
// writeJSON wrote of the whole list: statements compacted and escaped as
// json.Marshal writes a RawMessage.
func TestImageAttestationsStreamedIsWriteJSON(t *testing.T) {
	body := json.RawMessage("{\n  \"_type\": \"https://in-toto.io/Statement/v0.1\",\n  \"note\": \"<a> & \u2028\"\n}\n")
	list := []image.AttestationStatement{
		{Descriptor: ocispec.Descriptor{MediaType: "application/vnd.in-toto+json", Digest: digest.FromString("x"), Size: 1,
			Annotations: map[string]string{"in-toto.io/predicate-type": "https://spdx.dev/Document"}}, PredicateType: "https://spdx.dev/Document", Statement: &body},
		{Descriptor: ocispec.Descriptor{MediaType: "application/vnd.in-toto+json", Digest: digest.FromString("y"), Size: 2}, PredicateType: "p<>&"},
		{Descriptor: ocispec.Descriptor{MediaType: "application/vnd.in-toto+json", Digest: digest.FromString("z"), Size: 3}, PredicateType: "q", Statement: &body},
	}
	var failAt error
	b := &fakeBackend{attestations: func(string, types.AttestationOptions) ([]image.AttestationStatement, error) {
		return list, failAt
	}}
	rec := do(t, b, "GET", "/v1.55/images/x/attestations?statement=1", nil, nil)
	want := httptest.NewRecorder()
	writeJSON(want, 200, list)
	if rec.Code != 200 || rec.Body.String() != want.Body.String() {
		t.Fatalf("%d\n got %s\nwant %s", rec.Code, rec.Body, want.Body)
	}

	// Failing before the first statement: an error answer, as before.
	list, failAt = nil, fmt.Errorf("registry r: digest mismatch%.0w", errdefs.ErrDataLoss)
	if rec := do(t, b, "GET", "/v1.55/images/x/attestations?statement=1", nil, nil); rec.Code == 200 {
		t.Fatalf("error answered %d %s", rec.Code, rec.Body)
	}
	// After it, the header is out: the connection is aborted, never a
	// well-formed but shorter list.
	list = list[:0]
	list = append(list, image.AttestationStatement{Descriptor: ocispec.Descriptor{Digest: digest.FromString("x"), Size: 1}, PredicateType: "p"})
	func() {
		defer func() {
			if r := recover(); r != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler", r)
			}
		}()
		rec := do(t, b, "GET", "/v1.55/images/x/attestations?statement=1", nil, nil)
		t.Errorf("answered %d %q", rec.Code, rec.Body)
	}()
}
