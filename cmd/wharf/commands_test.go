package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// echoDaemon answers every request with what the routes below need.
func echoDaemon(t *testing.T) *fakeDaemon {
	return newFakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case p == "/v1.55/images/json":
			writeJSON(w, 200, `[{"Id":"sha256:a3e3b447a0a2bdac3511bc6921b1540d9a4971a37cdc3bbb80f5ce471fa8b2a2","RepoTags":["x:1"],"RepoDigests":[],"Created":1,"Size":1,"SharedSize":-1,"Containers":-1}]`)
		case strings.HasSuffix(p, "/tag"):
			if strings.Contains(p, "nosuch") {
				writeJSON(w, 404, `{"message":"No such image: nosuch:latest"}`)
				return
			}
			w.WriteHeader(201)
		case r.Method == http.MethodDelete:
			if strings.Contains(p, "nosuch") {
				writeJSON(w, 404, `{"message":"No such image: nosuch:latest"}`)
				return
			}
			writeJSON(w, 200, `[{"Untagged":"x:1"},{"Deleted":"sha256:a3e3"}]`)
		case p == "/v1.55/images/get":
			w.Header().Set("Content-Type", "application/x-tar")
			_, _ = io.WriteString(w, "TARBYTES")
		case p == "/v1.55/images/load":
			writeJSON(w, 200, `{"stream":"Loaded image: x:1\n"}`+"\r\n")
		case p == "/v1.55/images/create":
			writeJSON(w, 200, `{"status":"sha256:a3e3b447a0a2bdac3511bc6921b1540d9a4971a37cdc3bbb80f5ce471fa8b2a2"}`+"\r\n")
		case p == "/v1.55/events":
			writeJSON(w, 200, `{"status":"tag","id":"sha256:1","Type":"image","Action":"tag","Actor":{"ID":"sha256:1","Attributes":{"name":"x:1","b":"2"}},"scope":"local","time":1796283967,"timeNano":1796283967000000001}`+"\n")
		case p == "/v1.55/version":
			writeJSON(w, 200, `{"Version":"0.1.0","ApiVersion":"1.55","MinAPIVersion":"1.40","Os":"linux","Arch":"amd64","GoVersion":"go1.26"}`)
		default:
			writeJSON(w, 404, `{"message":"page not found"}`)
		}
	})
}

func TestImagesSendsFiltersAndReference(t *testing.T) {
	d := echoDaemon(t)
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "images", "-a", "--filter", "dangling=true", "x")
	if res.code != 0 {
		t.Fatalf("exit %d %s", res.code, res.stderr)
	}
	q := d.requests()[0].URL.Query()
	if q.Get("all") != "1" || q.Get("filters") != `{"dangling":{"true":true},"reference":{"x":true}}` {
		t.Errorf("query %v", q)
	}
	if !strings.HasPrefix(res.stdout, "REPOSITORY   TAG       IMAGE ID       CREATED") {
		t.Errorf("stdout %q", res.stdout)
	}
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "images", "--filter", "novalue"); res.code != 1 {
		t.Errorf("bad filter accepted")
	}
}

func TestTagAndRmi(t *testing.T) {
	d := echoDaemon(t)
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "tag", "x:1", "127.0.0.1:5000/y"); res.code != 0 {
		t.Fatalf("tag: %d %s", res.code, res.stderr)
	}
	r := d.requests()[0]
	if r.URL.EscapedPath() != "/v1.55/images/x:1/tag" || r.URL.RawQuery != "repo=127.0.0.1%3A5000%2Fy&tag=latest" {
		t.Errorf("tag request %s?%s", r.URL.EscapedPath(), r.URL.RawQuery)
	}
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "tag", "nosuch", "y:1")
	if res.code != 1 || res.stderr != "Error response from daemon: No such image: nosuch:latest\n" {
		t.Errorf("tag missing: %d %q", res.code, res.stderr)
	}
	res = runCLI(t, testEnv(t), "", "-H", d.host(), "rmi", "-f", "--no-prune", "x:1", "nosuch")
	if res.code != 1 || res.stdout != "Untagged: x:1\nDeleted: sha256:a3e3\n" || res.stderr != "Error response from daemon: No such image: nosuch:latest\n" {
		t.Errorf("rmi: %d %q %q", res.code, res.stdout, res.stderr)
	}
	rq := d.requests()[2]
	if rq.Method != http.MethodDelete || rq.URL.RawQuery != "force=1&noprune=1" {
		t.Errorf("rmi request %s %s", rq.Method, rq.URL.RawQuery)
	}
}

func TestSaveLoadImport(t *testing.T) {
	d := echoDaemon(t)
	out := filepath.Join(t.TempDir(), "x.tar")
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "save", "-o", out, "x:1", "y"); res.code != 0 {
		t.Fatalf("save: %d %s", res.code, res.stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != "TARBYTES" {
		t.Errorf("saved %q", b)
	}
	if q := d.requests()[0].URL.RawQuery; q != "names=x%3A1&names=y" {
		t.Errorf("save query %s", q)
	}
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "save", "x:1")
	if res.stdout != "TARBYTES" {
		t.Errorf("save to a pipe: %q", res.stdout)
	}

	res = runCLI(t, testEnv(t), "TARIN", "-H", d.host(), "load")
	if res.code != 0 || res.stdout != "Loaded image: x:1\n" {
		t.Errorf("load: %d %q %q", res.code, res.stdout, res.stderr)
	}
	load := d.requests()[2]
	if load.URL.RawQuery != "quiet=1" || string(d.bodies[2]) != "TARIN" || load.Header.Get("Content-Type") != "application/x-tar" {
		t.Errorf("load request %s %q", load.URL.RawQuery, d.bodies[2])
	}

	res = runCLI(t, testEnv(t), "ROOTFS", "-H", d.host(), "import", "-c", "CMD [\"/bin/sh\"]", "-m", "hi", "-", "127.0.0.1:5000/imp:1.0")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "sha256:a3e3") {
		t.Errorf("import: %d %q %q", res.code, res.stdout, res.stderr)
	}
	imp := d.requests()[3]
	if imp.URL.RawQuery != "changes=CMD+%5B%22%2Fbin%2Fsh%22%5D&fromSrc=-&message=hi&repo=127.0.0.1%3A5000%2Fimp%3A1.0" || string(d.bodies[3]) != "ROOTFS" {
		t.Errorf("import request %s %q", imp.URL.RawQuery, d.bodies[3])
	}
}

func TestEventsPrintsLikeDocker(t *testing.T) {
	d := echoDaemon(t)
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "events", "--since", "1796283967", "--until", "1796283997", "--filter", "type=image")
	if res.code != 0 {
		t.Fatalf("exit %d %s", res.code, res.stderr)
	}
	if q := d.requests()[0].URL.RawQuery; q != "filters=%7B%22type%22%3A%7B%22image%22%3Atrue%7D%7D&since=1796283967&until=1796283997" {
		t.Errorf("query %s", q)
	}
	if !strings.HasSuffix(res.stdout, " image tag sha256:1 (b=2, name=x:1)\n") || !strings.Contains(res.stdout, ".000000001") {
		t.Errorf("stdout %q", res.stdout)
	}
	res = runCLI(t, testEnv(t), "", "-H", d.host(), "events", "--format", "{{.Action}} {{.Actor.Attributes.name}}")
	if res.stdout != "tag x:1\n" {
		t.Errorf("format: %q", res.stdout)
	}
}

func TestVersionFormat(t *testing.T) {
	d := echoDaemon(t)
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "version", "--format", "{{.Server.Version}} {{.Server.ApiVersion}} {{.Client.ApiVersion}}")
	if res.code != 0 || res.stdout != "0.1.0 1.55 1.55\n" {
		t.Errorf("exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
	}
}

func TestHostFromEnvironment(t *testing.T) {
	d := echoDaemon(t)
	env := testEnv(t)
	env["WHARF_HOST"] = d.host()
	if res := runCLI(t, env, "", "version", "-f", "{{.Server.Version}}"); res.stdout != "0.1.0\n" {
		t.Errorf("WHARF_HOST ignored: %q %q", res.stdout, res.stderr)
	}
}

func TestCompletionOffersRemote(t *testing.T) {
	res := runCLI(t, testEnv(t), "", "__complete", "inspect", "--")
	for _, want := range []string{"--remote", "--raw", "--platform", "--type", "--format"} {
		if !strings.Contains(res.stdout, want+"\t") {
			t.Errorf("completion lacks %s:\n%s", want, res.stdout)
		}
	}
	res = runCLI(t, testEnv(t), "", "__complete", "inspect", "--type", "")
	if !strings.Contains(res.stdout, "image\n") || !strings.Contains(res.stdout, "container\n") {
		t.Errorf("--type values:\n%s", res.stdout)
	}
}

func TestGenCompletion(t *testing.T) {
	dir := t.TempDir()
	if res := runCLI(t, testEnv(t), "", "gen-completion", filepath.Join(dir, "c")); res.code != 0 {
		t.Fatalf("gen-completion: %d %s", res.code, res.stderr)
	}
	for _, f := range []string{"bash/wharf", "zsh/_wharf", "fish/wharf.fish"} {
		b, err := os.ReadFile(filepath.Join(dir, "c", f))
		if err != nil || !strings.Contains(string(b), "__complete") {
			t.Errorf("%s: %v", f, err)
		}
	}
	// gen-man is a maintainer's command, built with the gendocs tag only.
	if res := runCLI(t, testEnv(t), "", "gen-man", filepath.Join(dir, "man")); (res.code == 0) != genManBuilt {
		t.Fatalf("gen-man in a build where it is built=%v: exit %d %s", genManBuilt, res.code, res.stderr)
	}
}

func TestImportWithEmptyRefIsUntagged(t *testing.T) {
	d := echoDaemon(t)
	path := filepath.Join(t.TempDir(), "rootfs.tar")
	if err := os.WriteFile(path, []byte("ROOTFS"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "import", path, "")
	if res.code != 0 {
		t.Fatalf("exit %d %s", res.code, res.stderr)
	}
	if q := d.requests()[0].URL.Query(); q.Has("repo") || q.Get("fromSrc") != "-" {
		t.Errorf("query %v", q)
	}
}
