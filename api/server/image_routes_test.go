package server

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

func sampleInspect() *types.ImageInspect {
	return &types.ImageInspect{
		InspectResponse: image.InspectResponse{
			ID:           "sha256:aaaa",
			Created:      "",
			Architecture: "amd64",
			Os:           "linux",
			Size:         1234,
			Config: &dockerspec.DockerOCIImageConfig{
				ImageConfig: ocispec.ImageConfig{Env: []string{"PATH=/bin"}, Cmd: []string{"/bin/sh"}},
			},
			RootFS:     image.RootFS{Type: "layers", Layers: []string{"sha256:bbbb"}},
			Descriptor: &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: "sha256:cccc", Size: 500},
		},
		Legacy: types.LegacyImageFields{Parent: "sha256:pppp", DockerVersion: "20.10"},
	}
}

func decodeObject(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, b)
	}
	return m
}

func TestInspectVersionGating(t *testing.T) {
	tests := []struct {
		version string
		present []string
		absent  []string
		equal   map[string]string
	}{
		// skopeo 1.9 pins 1.22; dockerd 20.10 served down to 1.12 with the
		// same shape as 1.41.
		{"1.12",
			[]string{"VirtualSize", "Container", "ContainerConfig", "Parent", "Comment", "DockerVersion", "Author"},
			[]string{"Descriptor", "Identity"},
			map[string]string{"VirtualSize": "1234", "Created": `"0001-01-01T00:00:00Z"`, "RepoTags": "[]", "RepoDigests": "[]"}},
		{"1.22",
			[]string{"VirtualSize", "Container", "ContainerConfig", "Parent", "Comment", "DockerVersion", "Author"},
			[]string{"Descriptor", "Identity"},
			map[string]string{"VirtualSize": "1234", "Created": `"0001-01-01T00:00:00Z"`, "RepoTags": "[]", "RepoDigests": "[]"}},
		{"1.41",
			[]string{"VirtualSize", "Container", "ContainerConfig", "Parent", "Comment", "DockerVersion", "Author"},
			[]string{"Descriptor", "Identity"},
			map[string]string{"VirtualSize": "1234", "Created": `"0001-01-01T00:00:00Z"`, "Parent": `"sha256:pppp"`, "RepoTags": "[]", "RepoDigests": "[]", "Container": `""`}},
		{"1.44",
			[]string{"Container", "ContainerConfig", "Parent"},
			[]string{"VirtualSize", "Descriptor", "Created"},
			nil},
		{"1.45",
			[]string{"Parent", "DockerVersion", "Comment", "Author"},
			[]string{"VirtualSize", "Container", "ContainerConfig", "Descriptor"},
			nil},
		{"1.48",
			[]string{"Descriptor", "Parent"},
			[]string{"VirtualSize", "Container"},
			nil},
		{"1.50",
			[]string{"Descriptor", "Parent", "DockerVersion", "Comment", "Author"},
			[]string{"VirtualSize", "Container", "ContainerConfig", "Identity"},
			map[string]string{"DockerVersion": `"20.10"`, "Comment": `""`}},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			b := &fakeBackend{inspect: func(string, types.InspectOptions) (*types.ImageInspect, error) { return sampleInspect(), nil }}
			rec := do(t, b, "GET", "/v"+tc.version+"/images/busybox/json", nil, nil)
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			m := decodeObject(t, rec.Body.Bytes())
			for _, k := range tc.present {
				if _, ok := m[k]; !ok {
					t.Errorf("%s missing", k)
				}
			}
			for _, k := range tc.absent {
				if _, ok := m[k]; ok {
					t.Errorf("%s present: %s", k, m[k])
				}
			}
			for k, v := range tc.equal {
				if string(m[k]) != v {
					t.Errorf("%s = %s, want %s", k, m[k], v)
				}
			}
			cfg := decodeObject(t, m["Config"])
			legacyCfg := versionLess(tc.version, "1.50")
			if _, ok := cfg["Hostname"]; ok != legacyCfg {
				t.Errorf("Config.Hostname present=%v, want %v", ok, legacyCfg)
			}
			if string(cfg["Entrypoint"]) != "null" || string(cfg["Cmd"]) != `["/bin/sh"]` {
				t.Errorf("Config = %s", m["Config"])
			}
		})
	}
}

func TestInspectKeyOrderFollowsDockerd(t *testing.T) {
	b := &fakeBackend{inspect: func(string, types.InspectOptions) (*types.ImageInspect, error) { return sampleInspect(), nil }}
	body := do(t, b, "GET", "/v1.41/images/busybox/json", nil, nil).Body.String()
	order := []string{`"Id"`, `"RepoTags"`, `"Parent"`, `"Created"`, `"ContainerConfig"`, `"Config"`, `"Architecture"`, `"Size"`, `"VirtualSize"`, `"RootFS"`}
	last := -1
	for _, k := range order {
		i := strings.Index(body, k)
		if i < last {
			t.Fatalf("%s out of order in %s", k, body)
		}
		last = i
	}
}

func TestInspectOptions(t *testing.T) {
	var got types.InspectOptions
	b := &fakeBackend{inspect: func(_ string, o types.InspectOptions) (*types.ImageInspect, error) {
		got = o
		return sampleInspect(), nil
	}}
	plat := url.QueryEscape(`{"os":"linux","architecture":"arm64","variant":"v8"}`)
	tests := []struct {
		path      string
		status    int
		manifests bool
		arch      string
		msg       string
	}{
		{"/v1.50/images/x/json?manifests=1", 200, true, "", ""},
		{"/v1.47/images/x/json?manifests=1", 200, false, "", ""},
		{"/v1.50/images/x/json?platform=" + plat, 200, false, "arm64", ""},
		{"/v1.48/images/x/json?platform=" + plat, 200, false, "", ""},
		{"/v1.50/images/x/json?platform=notjson", 400, false, "", ""},
		{"/v1.50/images/x/json?manifests=1&platform=" + plat, 400, false, "", "conflicting options: manifests and platform options cannot both be set"},
		{"/v1.50/images/x/json?remote=1&manifests=1&platform=" + plat, 400, false, "", "conflicting options: manifests and platform options cannot both be set"},
	}
	for _, tc := range tests {
		got = types.InspectOptions{}
		rec := do(t, b, "GET", tc.path, nil, nil)
		if rec.Code != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.path, rec.Code, tc.status, rec.Body)
			continue
		}
		if tc.msg != "" && message(t, rec) != tc.msg {
			t.Errorf("%s: message %q", tc.path, message(t, rec))
		}
		if tc.status != 200 {
			continue
		}
		arch := ""
		if got.Platform != nil {
			arch = got.Platform.Architecture
		}
		if got.Manifests != tc.manifests || arch != tc.arch {
			t.Errorf("%s: options %+v", tc.path, got)
		}
	}
}

func TestInspectNameWithSlashesAndPort(t *testing.T) {
	var name string
	b := &fakeBackend{inspect: func(n string, _ types.InspectOptions) (*types.ImageInspect, error) {
		name = n
		return nil, fmt.Errorf("No such image: %s%.0w", n, errdefs.ErrNotFound)
	}}
	rec := do(t, b, "GET", "/v1.41/images/127.0.0.1:5000/team/app:1.0/json", nil, nil)
	if rec.Code != 404 || name != "127.0.0.1:5000/team/app:1.0" || message(t, rec) != "No such image: 127.0.0.1:5000/team/app:1.0" {
		t.Errorf("got %d %q %s", rec.Code, name, rec.Body)
	}
}

func TestRemoteInspect(t *testing.T) {
	auth := base64.URLEncoding.EncodeToString([]byte(`{"username":"u","password":"secret","serveraddress":"r.example"}`))
	var gotOpts types.RemoteInspectOptions
	b := &fakeBackend{
		inspect: func(string, types.InspectOptions) (*types.ImageInspect, error) { return sampleInspect(), nil },
		lookupRemote: func(n string, o types.RemoteInspectOptions) (*types.RemoteImageInspect, error) {
			gotOpts = o
			if n == "missing" {
				return nil, fmt.Errorf("No such image: %s%.0w", n, errdefs.ErrNotFound)
			}
			return &types.RemoteImageInspect{
				ImageInspect: *sampleInspect(), Registry: "r.example", Digest: "sha256:dddd", Tag: "1.0",
				PlatformManifestDigest: "sha256:cccc", ManifestAnnotations: map[string]string{"a": "b"},
				RateLimit: &types.RateLimit{Limit: 100, Remaining: 76, Window: 21600, Host: "r.example", Seen: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)},
			}, nil
		},
		remoteManifest: func(string, types.RemoteInspectOptions) ([]byte, ocispec.Descriptor, error) {
			// A sha512 reference: the registry's digest is not sha256(body).
			b := []byte(`{"schemaVersion":2}`)
			return b, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.SHA512.FromBytes(b), Size: int64(len(b))}, nil
		},
	}
	for _, v := range []string{"1.41", "1.44", "1.50"} {
		local := decodeObject(t, do(t, b, "GET", "/v"+v+"/images/x/json", nil, nil).Body.Bytes())
		rec := do(t, b, "GET", "/v"+v+"/images/x/json?remote=1", nil, map[string]string{"X-Registry-Auth": auth, "X-Meta-Trace": "t1"})
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", v, rec.Code, rec.Body)
		}
		// RateLimit is wharf's last field, after Referrers, in every version.
		if want := `,"RateLimit":{"Limit":100,"Remaining":76,"Window":21600,"Host":"r.example","Seen":"2026-12-04T10:00:00Z"}}`; !strings.HasSuffix(strings.TrimSpace(rec.Body.String()), want) {
			t.Errorf("%s: answer does not end with %s: %s", v, want, rec.Body)
		}
		remote := decodeObject(t, rec.Body.Bytes())
		for _, k := range []string{"GraphDriver", "Metadata", "VirtualSize"} {
			if _, ok := remote[k]; ok {
				t.Errorf("%s: remote answer carries the local-only field %s", v, k)
			}
			delete(local, k)
		}
		for k, lv := range local {
			if string(remote[k]) != string(lv) {
				t.Errorf("%s: %s local %s remote %s", v, k, lv, remote[k])
			}
		}
		for k, want := range map[string]string{"Registry": `"r.example"`, "Digest": `"sha256:dddd"`, "Tag": `"1.0"`, "PlatformManifestDigest": `"sha256:cccc"`} {
			if string(remote[k]) != want {
				t.Errorf("%s: %s = %s", v, k, remote[k])
			}
		}
	}
	if gotOpts.Auth == nil || gotOpts.Auth.Username != "u" || gotOpts.MetaHeaders.Get("X-Meta-Trace") != "t1" {
		t.Errorf("auth/meta not passed: %+v", gotOpts)
	}
	// A bad auth header is anonymous, not an error.
	rec := do(t, b, "GET", "/v1.50/images/x/json?remote=1", nil, map[string]string{"X-Registry-Auth": "%%%"})
	if rec.Code != 200 || gotOpts.Auth != nil {
		t.Errorf("bad auth: %d auth=%v", rec.Code, gotOpts.Auth)
	}
	rec = do(t, b, "GET", "/v1.50/images/missing/json?remote=1", nil, nil)
	if rec.Code != 404 || message(t, rec) != "No such image: missing" {
		t.Errorf("missing: %d %s", rec.Code, rec.Body)
	}
	rec = do(t, b, "GET", "/v1.50/images/x/json?remote=1&raw=1", nil, nil)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != ocispec.MediaTypeImageIndex || rec.Body.String() != `{"schemaVersion":2}` {
		t.Errorf("raw: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if got, want := rec.Header().Get("Docker-Content-Digest"), digest.SHA512.FromBytes([]byte(`{"schemaVersion":2}`)).String(); got != want {
		t.Errorf("raw: Docker-Content-Digest %s, want the registry's %s", got, want)
	}
}

func TestImageList(t *testing.T) {
	var gotOpts types.ImageListOptions
	b := &fakeBackend{images: func(o types.ImageListOptions) ([]image.Summary, error) {
		gotOpts = o
		return []image.Summary{
			{ID: "sha256:a", RepoTags: []string{"a:1"}, Size: 10, Containers: 0, SharedSize: -1,
				Descriptor: &ocispec.Descriptor{Digest: "sha256:d"}},
			{ID: "sha256:b", Size: 20},
		}, nil
	}}
	type row = map[string]json.RawMessage
	get := func(path string) ([]row, int) {
		rec := do(t, b, "GET", path, nil, nil)
		var rows []row
		if rec.Code == 200 {
			if err := json.Unmarshal(rec.Body.Bytes(), &rows); err != nil {
				t.Fatal(err)
			}
		}
		return rows, rec.Code
	}
	rows, _ := get("/v1.41/images/json?all=1")
	if string(rows[1]["RepoTags"]) != `["\u003cnone\u003e:\u003cnone\u003e"]` && string(rows[1]["RepoTags"]) != `["<none>:<none>"]` {
		t.Errorf("1.41 placeholders: %s", rows[1]["RepoTags"])
	}
	if string(rows[0]["VirtualSize"]) != "10" || string(rows[0]["Containers"]) != "-1" || rows[0]["Descriptor"] != nil {
		t.Errorf("1.41 row: %v", rows[0])
	}
	if !gotOpts.All {
		t.Error("all not passed")
	}
	rows, _ = get("/v1.50/images/json?manifests=1")
	if string(rows[1]["RepoTags"]) != "[]" || string(rows[1]["RepoDigests"]) != "[]" {
		t.Errorf("1.50 empty arrays: %v", rows[1])
	}
	if _, ok := rows[0]["VirtualSize"]; ok || rows[0]["Descriptor"] == nil || string(rows[0]["Containers"]) != "-1" {
		t.Errorf("1.50 row: %v", rows[0])
	}
	if !gotOpts.Manifests {
		t.Error("manifests not passed")
	}
	f := url.QueryEscape(`{"reference":{"busybox*":true},"dangling":["false"]}`)
	if _, code := get("/v1.50/images/json?filters=" + f); code != 200 || !gotOpts.Filters["reference"]["busybox*"] || !gotOpts.Filters["dangling"]["false"] {
		t.Errorf("filters: %d %v", code, gotOpts.Filters)
	}
	rec := do(t, b, "GET", "/v1.41/images/json?filters="+url.QueryEscape(`{"bogus":{"x":true}}`), nil, nil)
	if rec.Code != 400 || message(t, rec) != "Invalid filter 'bogus'" {
		t.Errorf("bad filter: %d %s", rec.Code, rec.Body)
	}
	rec = do(t, b, "GET", "/v1.41/images/json?filters=notjson", nil, nil)
	if rec.Code != 400 {
		t.Errorf("bad filters JSON: %d", rec.Code)
	}
}

func TestTagAndDelete(t *testing.T) {
	var args []string
	b := &fakeBackend{
		tag: func(n string, ref reference.NamedTagged) error {
			args = []string{n, reference.FamiliarName(ref), ref.Tag()}
			return nil
		},
		del: func(n string, force, prune bool) ([]image.DeleteResponse, error) {
			args = []string{n, fmt.Sprint(force), fmt.Sprint(prune)}
			return []image.DeleteResponse{{Untagged: n}}, nil
		},
	}
	tests := []struct {
		method, path string
		status       int
		args         []string
	}{
		{"POST", "/v1.41/images/127.0.0.1:5000/imported:1.0/tag?repo=127.0.0.1%3A5000%2Fimported2&tag=x", 201, []string{"127.0.0.1:5000/imported:1.0", "127.0.0.1:5000/imported2", "x"}},
		{"POST", "/v1.41/images/a/tag?repo=b%3A7", 201, []string{"a", "b", "7"}},
		{"POST", "/v1.41/images/a/tag?repo=b", 201, []string{"a", "b", "latest"}},
		{"POST", "/v1.41/images/a/tag?repo=BAD&tag=x", 400, nil},
		{"POST", "/v1.41/images/a/tag?repo=sha256", 400, nil},
		{"DELETE", "/v1.41/images/a:1?force=1&noprune=1", 200, []string{"a:1", "true", "false"}},
		{"DELETE", "/v1.41/images/a", 200, []string{"a", "false", "true"}},
	}
	for _, tc := range tests {
		args = nil
		rec := do(t, b, tc.method, tc.path, nil, nil)
		if rec.Code != tc.status {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, rec.Code, rec.Body)
		}
		if tc.status == 201 && rec.Body.Len() != 0 {
			t.Errorf("tag body %q", rec.Body)
		}
		if fmt.Sprint(args) != fmt.Sprint(tc.args) {
			t.Errorf("%s: args %v, want %v", tc.path, args, tc.args)
		}
	}
}

// POST /images/{name}/tag parses repo and tag once, in the handler, and
// hands the backend the fully qualified reference; every refusal keeps
// dockerd's message and a 400, and never reaches the backend.
func TestTagParsesOnceAtTheEdge(t *testing.T) {
	var got []string
	b := &fakeBackend{tag: func(n string, ref reference.NamedTagged) error {
		got = append(got, n+" "+ref.String())
		return nil
	}}
	digestRef := "b@sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		query  string
		status int
		want   string // the backend's call, or the error message
	}{
		{"repo=b", 201, "a docker.io/library/b:latest"},
		{"repo=b%3A7", 201, "a docker.io/library/b:7"},
		{"repo=b%3A7&tag=8", 201, "a docker.io/library/b:8"},
		{"repo=localhost%3A5000%2Fteam%2Fapp&tag=1.4", 201, "a localhost:5000/team/app:1.4"},
		{"repo=docker.io%2Flibrary%2Fb&tag=x", 201, "a docker.io/library/b:x"},
		{"", 400, "repository name must have at least one component"},
		{"repo=BAD&tag=x", 400, "invalid reference format: repository name (library/BAD) must be lowercase"},
		{"repo=b&tag=bad%20tag", 400, "invalid tag format"},
		{"repo=" + url.QueryEscape(digestRef), 400, "cannot import digest reference"},
		{"repo=" + url.QueryEscape(digestRef) + "&tag=x", 400, "cannot import digest reference"},
		{"repo=sha256", 400, "refusing to create an ambiguous tag using digest algorithm as name"},
		{"repo=docker.io%2Flibrary%2Fsha256&tag=x", 400, "refusing to create an ambiguous tag using digest algorithm as name"},
	} {
		got = nil
		rec := do(t, b, "POST", "/v1.50/images/a/tag?"+tc.query, nil, nil)
		if rec.Code != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.query, rec.Code, rec.Body, tc.status)
			continue
		}
		if tc.status == 201 {
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("%s: backend got %q, want %q", tc.query, got, tc.want)
			}
			continue
		}
		if m := message(t, rec); m != tc.want || got != nil {
			t.Errorf("%s: %q (backend %q), want %q", tc.query, m, got, tc.want)
		}
	}
}

// streamLines splits a stream body on "\r\n" and checks every line ends so.
func streamLines(t *testing.T, body string) []string {
	t.Helper()
	if body == "" {
		return nil
	}
	if !strings.HasSuffix(body, "\r\n") {
		t.Errorf("stream does not end in \\r\\n: %q", body)
	}
	return strings.Split(strings.TrimSuffix(body, "\r\n"), "\r\n")
}

func TestPullStreaming(t *testing.T) {
	var got types.PullOptions
	tests := []struct {
		name   string
		query  string
		pull   func(types.PullOptions, types.ProgressWriter) error
		status int
		lines  []string
	}{
		{"error before stream", "fromImage=r%2Fmissing&tag=1.0",
			func(types.PullOptions, types.ProgressWriter) error {
				return fmt.Errorf("manifest unknown%.0w", errdefs.ErrNotFound)
			}, 404, nil},
		{"error after stream", "fromImage=r%2Ftiny&tag=1.0",
			func(_ types.PullOptions, out types.ProgressWriter) error {
				_ = out.WriteMessage(jsonstream.Message{Status: "Pulling from r/tiny", ID: "1.0"})
				return fmt.Errorf("no matching manifest for windows/s390x%.0w", errdefs.ErrNotFound)
			}, 200, []string{
				`{"status":"Pulling from r/tiny","id":"1.0"}`,
				`{"errorDetail":{"message":"no matching manifest for windows/s390x"},"error":"no matching manifest for windows/s390x"}`,
			}},
		{"success", "fromImage=r%2Ftiny&tag=sha256%3A1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6&platform=linux%2Farm64%2Fv8",
			func(_ types.PullOptions, out types.ProgressWriter) error {
				_ = out.WriteMessage(jsonstream.Message{Status: "Downloading", ID: "abc", Progress: &jsonstream.Progress{Current: 1, Total: 2}})
				return out.WriteMessage(jsonstream.Message{Status: "Status: Downloaded newer image for r/tiny"})
			}, 200, []string{
				`{"status":"Downloading","progressDetail":{"current":1,"total":2},"id":"abc"}`,
				`{"status":"Status: Downloaded newer image for r/tiny"}`,
			}},
		{"scratch", "fromImage=scratch", nil, 403, nil},
		{"bad name", "fromImage=UPPER", nil, 400, nil},
		{"bad platform", "fromImage=a&platform=linux%2F%2F", nil, 400, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{pull: func(o types.PullOptions, out types.ProgressWriter) error {
				got = o
				return tc.pull(o, out)
			}}
			rec := do(t, b, "POST", "/v1.50/images/create?"+tc.query, nil, map[string]string{"X-Meta-Foo": "bar", "X-Registry-Auth": "e30="})
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.status != 200 {
				if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("error Content-Type %q", ct)
				}
				message(t, rec)
				return
			}
			if lines := streamLines(t, rec.Body.String()); fmt.Sprint(lines) != fmt.Sprint(tc.lines) {
				t.Errorf("lines\n%q\nwant\n%q", lines, tc.lines)
			}
			if got.MetaHeaders.Get("X-Meta-Foo") != "bar" || got.Auth != nil {
				t.Errorf("opts %+v", got)
			}
		})
	}
	if got.Platform == nil || got.Platform.Architecture != "arm64" || got.Platform.Variant != "" || !strings.HasPrefix(got.Ref.Digest().String(), "sha256:") {
		t.Errorf("success opts: %+v %+v", got, got.Platform)
	}
}

func TestImport(t *testing.T) {
	var got types.ImportOptions
	var body string
	b := &fakeBackend{importImage: func(r io.Reader, o types.ImportOptions, out types.ProgressWriter) error {
		got = o
		bb, _ := io.ReadAll(r)
		body = string(bb)
		return out.WriteMessage(jsonstream.Message{Status: "sha256:abc"})
	}}
	rec := do(t, b, "POST", "/v1.41/images/create?fromSrc=-&repo=127.0.0.1%3A5000%2Fimported3%3A1.0&changes=CMD+%5B%22%2Fbin%2Fsh%22%5D&changes=ENV+A%3Db", strings.NewReader("TAR"), nil)
	if rec.Code != 200 || body != "TAR" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if got.Repo != "127.0.0.1:5000/imported3" || got.Tag != "1.0" || len(got.Changes) != 2 || got.Message != "Imported from -" {
		t.Errorf("opts %+v", got)
	}
}

func TestLoadErrorsAreInStream(t *testing.T) {
	var quiet bool
	b := &fakeBackend{load: func(_ io.Reader, q bool, out types.ProgressWriter) error {
		quiet = q
		return fmt.Errorf("unexpected EOF%.0w", errdefs.ErrInvalidArgument)
	}}
	rec := do(t, b, "POST", "/v1.41/images/load", strings.NewReader("garbage"), nil)
	if rec.Code != 200 || !quiet {
		t.Fatalf("%d quiet=%v", rec.Code, quiet)
	}
	lines := streamLines(t, rec.Body.String())
	if len(lines) != 1 || lines[0] != `{"errorDetail":{"message":"unexpected EOF"},"error":"unexpected EOF"}` {
		t.Errorf("lines %q", lines)
	}
	do(t, b, "POST", "/v1.41/images/load?quiet=0", strings.NewReader(""), nil)
	if quiet {
		t.Error("quiet=0 not honoured")
	}
}

func TestSave(t *testing.T) {
	b := &fakeBackend{export: func(names []string, w io.Writer) error {
		if names[0] == "missing" {
			return fmt.Errorf("No such image: missing%.0w", errdefs.ErrNotFound)
		}
		_, err := io.WriteString(w, strings.Join(names, ","))
		return err
	}}
	rec := do(t, b, "GET", "/v1.41/images/get?names=a&names=b", nil, nil)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/x-tar" || rec.Body.String() != "a,b" {
		t.Errorf("get: %d %v %q", rec.Code, rec.Header(), rec.Body)
	}
	rec = do(t, b, "GET", "/v1.41/images/r/x:1/get", nil, nil)
	if rec.Code != 200 || rec.Body.String() != "r/x:1" {
		t.Errorf("name/get: %d %q", rec.Code, rec.Body)
	}
	rec = do(t, b, "GET", "/v1.41/images/get?names=missing", nil, nil)
	if rec.Code != 404 || message(t, rec) != "No such image: missing" {
		t.Errorf("missing: %d %s", rec.Code, rec.Body)
	}
}
