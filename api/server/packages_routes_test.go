package server

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/types"
)

func TestImagePackagesRouteReadsImageQuery(t *testing.T) {
	var gotName string
	var got types.PackagesOptions
	b := &fakeBackend{packages: func(n string, o types.PackagesOptions) (*types.ImagePackages, error) {
		gotName, got = n, o
		return &types.ImagePackages{Image: n, Source: types.PackagesFromDatabases,
			Packages: []types.Package{{Name: "bash", Version: "5.2", Type: types.PackageTypeDeb}}}, nil
	}}
	auth := base64.URLEncoding.EncodeToString([]byte(`{"username":"u","password":"p","serveraddress":"localhost:5000"}`))
	rec := do(t, b, http.MethodGet, `/v1.50/wharf/images/localhost:5000/team/app:1/packages?remote=1&platform={"os":"linux","architecture":"arm64"}`,
		nil, map[string]string{"X-Registry-Auth": auth, "X-Meta-Trace": "t1"})
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if gotName != "localhost:5000/team/app:1" || !got.Remote || got.Platform == nil || got.Platform.Architecture != "arm64" ||
		got.Auth == nil || got.Auth.Username != "u" || got.MetaHeaders.Get("X-Meta-Trace") != "t1" {
		t.Errorf("backend asked %q %+v", gotName, got)
	}
	var out types.ImagePackages
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Packages) != 1 || out.Packages[0].Name != "bash" {
		t.Fatalf("%v %+v", err, out)
	}
}

func TestImagePackagesRouteErrors(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		err         error
		status      int
	}{
		{"two platforms", "?platform=%7B%7D&platform=%7B%7D", nil, http.StatusBadRequest},
		{"bad platform", "?platform=nope", nil, http.StatusBadRequest},
		{"not found", "", fmt.Errorf("no such image: %w", errdefs.ErrNotFound), http.StatusNotFound},
		{"too large", "", fmt.Errorf("rpmdb: %w", errdefs.ErrResourceExhausted), http.StatusTooManyRequests},
		{"unknown format", "?format=syft-table", nil, http.StatusBadRequest},
		{"a document's error before its first byte", "?format=spdx-json", fmt.Errorf("no such image: %w", errdefs.ErrNotFound), http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{packages: func(string, types.PackagesOptions) (*types.ImagePackages, error) { return nil, tc.err }}
			rec := do(t, b, http.MethodGet, "/wharf/images/app/packages"+tc.query, nil, nil)
			if rec.Code != tc.status {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
		})
	}
}

// format=cyclonedx-json and spdx-json answer the list as those documents,
// with their media types, the daemon named as the tool.
func TestImagePackagesRouteWritesSBOMDocuments(t *testing.T) {
	b := &fakeBackend{packages: func(n string, _ types.PackagesOptions) (*types.ImagePackages, error) {
		return &types.ImagePackages{Image: n, Digest: "sha256:" + strings.Repeat("a", 64), Source: types.PackagesFromDatabases,
			Packages: []types.Package{{Name: "bash", Version: "5.2", Type: types.PackageTypeDeb, PURL: "pkg:deb/debian/bash@5.2"}}}, nil
	}}
	for format, ct := range map[string]string{"cyclonedx-json": "application/vnd.cyclonedx+json", "spdx-json": "application/spdx+json"} {
		rec := do(t, b, http.MethodGet, "/wharf/images/app:1/packages?format="+format, nil, nil)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ct {
			t.Fatalf("%s: %d %q %s", format, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
		var doc map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if !strings.Contains(rec.Body.String(), "pkg:deb/debian/bash@5.2") {
			t.Fatalf("%s: the package is missing: %s", format, rec.Body)
		}
		if _, ok := doc["bomFormat"]; ok != (format == "cyclonedx-json") {
			t.Fatalf("%s: not that format: %s", format, rec.Body)
		}
	}
}
