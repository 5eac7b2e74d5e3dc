package main

import (
	"net/http"
	"testing"

	"github.com/wharfproject/wharf/client"
)

func TestSystemExportIndex(t *testing.T) {
	d := newFakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, `{"Path":"/var/lib/wharf/index.json","Entries":12}`)
	})
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "system", "export-index")
	if res.code != 0 || res.stdout != "/var/lib/wharf/index.json: 12 entries\n" {
		t.Fatalf("%d %q %q", res.code, res.stdout, res.stderr)
	}
	if got := d.paths(); len(got) != 1 || got[0] != "POST /v"+client.DefaultVersion+"/wharf/system/export-index" {
		t.Fatalf("requests %v", got)
	}
	res = runCLI(t, testEnv(t), "", "-H", d.host(), "system", "export-index", "--json")
	if res.code != 0 || res.stdout != "{\n    \"Path\": \"/var/lib/wharf/index.json\",\n    \"Entries\": 12\n}\n" {
		t.Fatalf("--json: %d %q %q", res.code, res.stdout, res.stderr)
	}
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "system", "export-index", "extra"); res.code == 0 {
		t.Fatal("an argument was accepted")
	}
}

func TestSystemExportIndexDaemonError(t *testing.T) {
	d := newFakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusInternalServerError, `{"message":"export-index: no space left on device"}`)
	})
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "system", "export-index")
	if res.code != 1 || res.stderr != "Error response from daemon: export-index: no space left on device\n" {
		t.Fatalf("%d %q %q", res.code, res.stdout, res.stderr)
	}
}
