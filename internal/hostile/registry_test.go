package hostile

import (
	"io"
	"net/http"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		path string
		want Request
	}{
		{"/v2/", Request{Kind: KindPing}},
		{"/token", Request{Kind: KindToken}},
		{"/v2/a/b/manifests/1.0", Request{Kind: KindManifest, Repo: "a/b", Ref: "1.0"}},
		{"/v2/a/blobs/sha256:ab", Request{Kind: KindBlob, Repo: "a", Ref: "sha256:ab"}},
		{"/v2/a/b/tags/list", Request{Kind: KindTags, Repo: "a/b"}},
		{"/elsewhere", Request{}},
	} {
		if got := Classify(tc.path); got != tc.want {
			t.Errorf("Classify(%q) = %+v, want %+v", tc.path, got, tc.want)
		}
	}
}

// The default registry serves its image, and a Fault replaces answers.
func TestRegistryServesImageAndFaults(t *testing.T) {
	r, err := Start(Options{Fault: func(w http.ResponseWriter, hr *http.Request, req Request) bool {
		if req.Kind == KindTags {
			w.WriteHeader(http.StatusTeapot)
			return true
		}
		return false
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	get := func(path string) (int, []byte) {
		resp, err := http.Get(r.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, b := get("/v2/" + r.Repo + "/manifests/" + r.Tag); code != 200 || string(b) != string(r.Image.Manifest.Data) {
		t.Errorf("manifest: %d %s", code, b)
	}
	if code, b := get("/v2/" + r.Repo + "/blobs/" + r.Image.Config.Digest); code != 200 || string(b) != string(r.Image.Config.Data) {
		t.Errorf("config: %d %s", code, b)
	}
	if code, _ := get("/v2/" + r.Repo + "/blobs/" + r.Image.Manifest.Digest); code != 404 {
		t.Errorf("manifest as blob: %d", code)
	}
	if code, _ := get("/v2/" + r.Repo + "/tags/list"); code != http.StatusTeapot {
		t.Errorf("fault not applied: %d", code)
	}
	if n := r.Count(KindManifest); n != 1 {
		t.Errorf("Count(manifest) = %d", n)
	}
}
