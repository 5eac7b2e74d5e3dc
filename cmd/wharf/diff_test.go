package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/wharfproject/wharf/api/types"
)

var testDiff = types.ImageDiff{
	From:   types.DiffImage{Kind: "local", Name: "app:1", Digest: "sha256:aa"},
	To:     types.DiffImage{Kind: "remote", Name: "reg.example.com/app:2", Digest: "sha256:bb", Platform: "linux/amd64"},
	Config: &types.ConfigDiff{Changes: []types.Changed{{Field: "Env[V]", From: "1", To: "2"}, {Field: "Labels[new]", To: "y"}}},
	Pull:   &types.PullCost{Layers: []types.DiffLayer{{Digest: "sha256:cc", Size: 1500}}, Bytes: 1700, Present: 2},
	Files: &types.FilesDiff{LayersIndexed: 2, Changes: []types.FileChange{
		{Path: "/etc/app.conf", Change: "changed", What: []string{"content"}},
		{Path: "/new", Change: "added", To: &types.FileEntry{Type: "file", Size: 12}},
	}},
	Packages: &types.PackagesDiff{Upgraded: []types.PackageChange{{Name: "libfoo", Type: "deb", From: "1.0", To: "1.1"}}},
	Errors:   map[string]string{"signer": "boom"},
}

// diffDaemon answers GET /wharf/images/diff with answer for any pair but
// "same" against itself, which is empty.
func diffDaemon(t *testing.T) *fakeDaemon {
	return newFakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1.55/info":
			writeJSON(w, 200, searchInfo)
		case strings.HasSuffix(r.URL.Path, "/wharf/images/diff"):
			q := r.URL.Query()
			d := testDiff
			if q.Get("from") == "same" && q.Get("to") == "same" {
				d = types.ImageDiff{Config: &types.ConfigDiff{}, Files: &types.FilesDiff{}}
			}
			if q.Get("from") == "gone" {
				writeJSON(w, 404, `{"message":"No such image: gone"}`)
				return
			}
			b, _ := json.Marshal(d)
			writeJSON(w, 200, string(b)+"\n")
		default:
			writeJSON(w, 404, `{"message":"page not found"}`)
		}
	})
}

func TestDiffTable(t *testing.T) {
	d := diffDaemon(t)
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "diff", "app:1", "remote:reg.example.com/app:2")
	want := "From: local:app:1 (sha256:aa)\n" +
		"To:   remote:reg.example.com/app:2 (sha256:bb, linux/amd64)\n" +
		"\nCONFIG\n~ Env[V]: 1 -> 2\n+ Labels[new]: y\n" +
		"\nPULL\n1 layers, 1.7kB to download (2 already present)\n+ sha256:cc 1.5kB\n" +
		"\nFILES (2 layers indexed)\n~ /etc/app.conf  content\n+ /new  12B\n" +
		"\nPACKAGES\n~ libfoo (deb) 1.0 -> 1.1\n" +
		"\nNOT BUILT\n! signer: boom\n"
	if res.code != 0 || res.stdout != want {
		t.Fatalf("code %d\n%s\nwant\n%s\nstderr %s", res.code, res.stdout, want, res.stderr)
	}
	if !strings.Contains(res.stderr, "section signer: boom") {
		t.Errorf("stderr %q lacks the section's error", res.stderr)
	}
}

func TestDiffFormatsAndQuery(t *testing.T) {
	d := diffDaemon(t)
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "diff", "--format", "json", "--remote", "--sections", "config,files", "--platform", "linux/arm64", "a", "b")
	var got types.ImageDiff
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &got) != nil || got.Files == nil || strings.Count(res.stdout, "\n") != 1 {
		t.Fatalf("json: %d %q", res.code, res.stdout)
	}
	reqs := d.apiRequests()
	q := reqs[len(reqs)-1].URL.Query()
	if q.Get("from") != "a" || q.Get("to") != "b" || q.Get("remote") != "1" || q.Get("sections") != "config,files" || !strings.Contains(q.Get("platform"), "arm64") {
		t.Errorf("query %v", q)
	}
	res = runCLI(t, testEnv(t), "", "-H", d.host(), "diff", "--format", "{{.Pull.Bytes}} {{len .Files.Changes}}", "a", "b")
	if res.code != 0 || res.stdout != "1700 2\n" {
		t.Errorf("template: %d %q %s", res.code, res.stdout, res.stderr)
	}
}

func TestDiffExitCode(t *testing.T) {
	d := diffDaemon(t)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"same", "same"}, 0},
		{[]string{"--exit-code", "same", "same"}, 0},
		{[]string{"--exit-code", "a", "b"}, 1},
		{[]string{"a", "b"}, 0},
		{[]string{"--exit-code", "gone", "b"}, 2},
		{[]string{"gone", "b"}, 1},
	} {
		res := runCLI(t, testEnv(t), "", append([]string{"-H", d.host(), "diff", "--format", "json"}, tc.args...)...)
		if res.code != tc.code {
			t.Errorf("diff %v: exit %d, want %d (%s)", tc.args, res.code, tc.code, res.stderr)
		}
	}
}
