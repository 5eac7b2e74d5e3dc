package server

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
)

// exportingBackend is a fakeBackend that also exports index.json.
type exportingBackend struct {
	fakeBackend
	calls int
}

func (b *exportingBackend) SystemExportIndex(context.Context) (*ExportIndexReport, error) {
	b.calls++
	return &ExportIndexReport{Path: "/r/index.json", Entries: 4}, nil
}

func TestSystemExportIndexRoute(t *testing.T) {
	b := &exportingBackend{}
	for i, p := range []string{"/wharf/system/export-index", "/v1.50/wharf/system/export-index"} {
		rec := do(t, b, http.MethodPost, p, nil, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", p, rec.Code, rec.Body)
		}
		var got ExportIndexReport
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got != (ExportIndexReport{Path: "/r/index.json", Entries: 4}) {
			t.Fatalf("%s: %v %s", p, err, rec.Body)
		}
		if b.calls != i+1 {
			t.Fatalf("%s: %d calls", p, b.calls)
		}
	}
	// A GET does not write: only POST is routed.
	if rec := do(t, b, http.MethodGet, "/wharf/system/export-index", nil, nil); rec.Code == http.StatusOK || b.calls != 2 {
		t.Fatalf("GET: %d, %d calls", rec.Code, b.calls)
	}
}

func TestSystemExportIndexWithoutStoreIs501(t *testing.T) {
	rec := do(t, &fakeBackend{}, http.MethodPost, "/wharf/system/export-index", nil, nil)
	if rec.Code != http.StatusNotImplemented || message(t, rec) == "" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}
