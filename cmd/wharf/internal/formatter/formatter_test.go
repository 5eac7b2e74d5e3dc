package formatter

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/image"
)

var testNow = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func TestHumanSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0B"},
		{528, "528B"},
		{7_800_000, "7.8MB"},
		{1_234_567_890, "1.23GB"},
		// go-units' %.3g quirk, which docker shows too.
		{999_999, "1e+03kB"},
		{999_000, "999kB"},
		{5_000_000, "5MB"},
	}
	for _, tt := range tests {
		if got := HumanSize(tt.in); got != tt.want {
			t.Errorf("HumanSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSinceString(t *testing.T) {
	tests := []struct {
		ago  time.Duration
		want string
	}{
		{2 * time.Hour, "2 hours ago"},
		{30 * time.Second, "30 seconds ago"},
		{90 * time.Second, "About a minute ago"},
		{3 * 24 * time.Hour, "3 days ago"},
		{60 * 24 * time.Hour, "2 months ago"},
	}
	for _, tt := range tests {
		if got := Since(testNow.Add(-tt.ago), testNow); got != tt.want {
			t.Errorf("Since(-%s) = %q, want %q", tt.ago, got, tt.want)
		}
	}
	if got := Since(time.Unix(0, 0), testNow); got != "N/A" {
		t.Errorf("zero time: %q", got)
	}
}

func TestTemplateFunctions(t *testing.T) {
	data := map[string]any{
		"List":   []string{"a", "b"},
		"Name":   "hello world",
		"Upper":  "MiXeD",
		"Obj":    map[string]any{"k": "<v>"},
		"Ints":   []int{1, 2},
		"Digest": "sha256:abcdef",
	}
	tests := []struct{ format, want string }{
		{`{{json .List}}`, `["a","b"]`},
		{`{{json .Obj}}`, `{"k":"<v>"}`},
		{`{{join .List ", "}}`, "a, b"},
		{`{{join .Ints "+"}}`, "1+2"},
		{`{{upper .Name}}`, "HELLO WORLD"},
		{`{{lower .Upper}}`, "mixed"},
		{`{{title .Name}}`, "Hello World"},
		{`{{index (split .Digest ":") 1}}`, "abcdef"},
		{`{{truncate .Digest 6}}`, "sha256"},
		{`{{pad .Name 1 2}}|`, " hello world  |"},
	}
	for _, tt := range tests {
		tmpl, err := Parse(tt.format)
		if err != nil {
			t.Fatalf("%s: %v", tt.format, err)
		}
		var b bytes.Buffer
		if err := tmpl.Execute(&b, data); err != nil {
			t.Fatalf("%s: %v", tt.format, err)
		}
		if b.String() != tt.want {
			t.Errorf("%s = %q, want %q", tt.format, b.String(), tt.want)
		}
	}
	if _, err := Parse("{{.Unclosed"); err == nil || !strings.HasPrefix(err.Error(), "template parsing error") {
		t.Errorf("bad template: %v", err)
	}
}

func TestWriteJSONArrayIndentsBy4Spaces(t *testing.T) {
	var b bytes.Buffer
	if err := JSONArray(&b, []json.RawMessage{json.RawMessage(`{"Id":"x","A":[1]}`), json.RawMessage(`{"Id":"y"}`)}); err != nil {
		t.Fatal(err)
	}
	want := "[\n    {\n        \"Id\": \"x\",\n        \"A\": [\n            1\n        ]\n    },\n    {\n        \"Id\": \"y\"\n    }\n]\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := JSONArray(&b, nil); err != nil || b.String() != "[]\n" {
		t.Errorf("empty: %q %v", b.String(), err)
	}
}

func testSummaries() []image.Summary {
	return []image.Summary{
		{
			ID:          "sha256:a3e3b447a0a2bdac3511bc6921b1540d9a4971a37cdc3bbb80f5ce471fa8b2a2",
			RepoTags:    []string{"127.0.0.1:5000/tiny:1.0", "alpine:latest"},
			RepoDigests: []string{"127.0.0.1:5000/tiny@sha256:1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6"},
			Created:     testNow.Add(-2 * time.Hour).Unix(),
			Size:        7_800_000,
			SharedSize:  -1,
			Containers:  -1,
		},
		{
			ID:         "sha256:0000000000001111111111112222222222223333333333334444444444445555",
			Created:    testNow.Add(-3 * 24 * time.Hour).Unix(),
			Size:       528,
			SharedSize: -1,
			Containers: -1,
		},
	}
}

func imagesOut(t *testing.T, o ImagesOptions) string {
	t.Helper()
	var out bytes.Buffer
	if err := Images(&out, testSummaries(), o, testNow); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestImagesDefaultTable(t *testing.T) {
	got := imagesOut(t, ImagesOptions{})
	want := "" +
		"REPOSITORY            TAG       IMAGE ID       CREATED       SIZE\n" +
		"127.0.0.1:5000/tiny   1.0       a3e3b447a0a2   2 hours ago   7.8MB\n" +
		"alpine                latest    a3e3b447a0a2   2 hours ago   7.8MB\n" +
		"<none>                <none>    000000000000   3 days ago    528B\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestImagesDigestsAndNoTrunc(t *testing.T) {
	got := imagesOut(t, ImagesOptions{Digests: true, NoTrunc: true})
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines:\n%s", len(lines), got)
	}
	for _, h := range []string{"REPOSITORY", "TAG", "DIGEST", "IMAGE ID", "CREATED", "SIZE"} {
		if !strings.Contains(lines[0], h) {
			t.Errorf("header %q lacks %s", lines[0], h)
		}
	}
	if !strings.Contains(lines[1], "sha256:1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6") ||
		!strings.Contains(lines[1], "sha256:a3e3b447a0a2bdac3511bc6921b1540d9a4971a37cdc3bbb80f5ce471fa8b2a2") {
		t.Errorf("row %q lacks the digest or the full ID", lines[1])
	}
	if !strings.Contains(lines[2], "alpine") || !strings.Contains(lines[2], "<none>") {
		t.Errorf("row without digest: %q", lines[2])
	}
}

func TestImagesQuietAndFormats(t *testing.T) {
	if got := imagesOut(t, ImagesOptions{Quiet: true}); got != "a3e3b447a0a2\na3e3b447a0a2\n000000000000\n" {
		t.Errorf("quiet: %q", got)
	}
	if got := imagesOut(t, ImagesOptions{Format: `{{.Repository}}:{{.Tag}}`}); got != "127.0.0.1:5000/tiny:1.0\nalpine:latest\n<none>:<none>\n" {
		t.Errorf("template: %q", got)
	}
	got := imagesOut(t, ImagesOptions{Format: `table {{.Repository}}\t{{.Size}}`})
	want := "REPOSITORY            SIZE\n127.0.0.1:5000/tiny   7.8MB\nalpine                7.8MB\n<none>                528B\n"
	if got != want {
		t.Errorf("table template: got\n%s\nwant\n%s", got, want)
	}
	got = imagesOut(t, ImagesOptions{Format: "json"})
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	var row map[string]string
	if err := json.Unmarshal([]byte(lines[1]), &row); err != nil || row["Repository"] != "alpine" || row["ID"] != "a3e3b447a0a2" || row["CreatedSince"] != "2 hours ago" {
		t.Errorf("json row %q: %v", lines[1], err)
	}
}

func TestHistoryTable(t *testing.T) {
	items := []image.HistoryResponseItem{
		{ID: "sha256:a3e3b447a0a2bdac3511bc6921b1540d9a4971a37cdc3bbb80f5ce471fa8b2a2", Created: testNow.Add(-2 * time.Hour).Unix(), CreatedBy: "/bin/sh -c #(nop) ADD file:0123456789abcdef0123456789abcdef in / ", Size: 7_800_000, Tags: []string{"x:1"}},
		{ID: "<missing>", Created: testNow.Add(-2 * time.Hour).Unix(), CreatedBy: "CMD [\"sh\"]", Size: 0, Comment: "buildkit.dockerfile.v0"},
	}
	var out bytes.Buffer
	if err := History(&out, items, HistoryOptions{Human: true}, testNow); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"IMAGE          CREATED       CREATED BY                                      SIZE      COMMENT\n" +
		"a3e3b447a0a2   2 hours ago   /bin/sh -c #(nop) ADD file:0123456789abcdef0…   7.8MB     \n" +
		"<missing>      2 hours ago   CMD [\"sh\"]                                      0B        buildkit.dockerfile.v0\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if err := History(&out, items[:1], HistoryOptions{Human: false, NoTrunc: true, Format: "{{.ID}} {{.Size}} {{.CreatedSince}}"}, testNow); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, "sha256:a3e3b447a0a2bdac3511bc6921b1540d9a4971a37cdc3bbb80f5ce471fa8b2a2 7800000 2026-12-03T") {
		t.Errorf("-H=false --no-trunc: %q", got)
	}
}
