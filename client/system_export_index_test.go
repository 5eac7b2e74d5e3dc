package client

import (
	"context"
	"net/http"
	"testing"
)

func TestSystemExportIndexPathAndReport(t *testing.T) {
	r, c := newRecorder(t, http.StatusOK, "application/json", `{"Path":"/var/lib/wharf/index.json","Entries":3}`)
	rep, err := c.SystemExportIndex(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.last.Method != http.MethodPost || r.last.URL.Path != "/v"+DefaultVersion+"/wharf/system/export-index" {
		t.Fatalf("request %s %s", r.last.Method, r.last.URL.Path)
	}
	if rep.Path != "/var/lib/wharf/index.json" || rep.Entries != 3 {
		t.Fatalf("%+v", rep)
	}
}

func TestSystemExportIndexError(t *testing.T) {
	_, c := newRecorder(t, http.StatusNotImplemented, "application/json", `{"message":"export-index: this store keeps no index.json"}`)
	if _, err := c.SystemExportIndex(context.Background()); err == nil {
		t.Fatal("a 501 must be an error")
	}
}
