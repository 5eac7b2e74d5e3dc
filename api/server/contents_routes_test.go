package server

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

func TestImageFilesRoute(t *testing.T) {
	var gotName string
	var got types.FilesOptions
	entries := []types.FileEntry{
		{Path: "/etc", Type: types.FileTypeDir, Mode: 0o755 | uint32(1<<31)},
		{Path: "/etc/os-release", Type: types.FileTypeSymlink, Linkname: "../usr/lib/os-release", Layer: "sha256:aa"},
	}
	b := &fakeBackend{files: func(n string, o types.FilesOptions, emit func(types.FileEntry) error) error {
		gotName, got = n, o
		for _, e := range entries {
			if err := emit(e); err != nil {
				return err
			}
		}
		return nil
	}}
	auth := base64.URLEncoding.EncodeToString([]byte(`{"username":"u","password":"p","serveraddress":"localhost:5000"}`))
	rec := do(t, b, http.MethodGet, `/v1.50/wharf/images/localhost:5000/team/app:1/files?path=/etc&recursive=1&layers=1&remote=1&platform={"os":"linux","architecture":"arm64"}`,
		nil, map[string]string{"X-Registry-Auth": auth, "X-Meta-Trace": "t1"})
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ndjson {
		t.Fatalf("%d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	if gotName != "localhost:5000/team/app:1" || got.Path != "/etc" || !got.Recursive || !got.Layers || !got.Remote ||
		got.Platform == nil || got.Platform.Architecture != "arm64" || got.Auth == nil || got.Auth.Username != "u" || got.MetaHeaders.Get("X-Meta-Trace") != "t1" {
		t.Errorf("backend asked %q %+v", gotName, got)
	}
	sc := bufio.NewScanner(rec.Body)
	var lines []types.FileEntry
	for sc.Scan() {
		var e types.FileEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, e)
	}
	if len(lines) != 2 || lines[1] != entries[1] || lines[0] != entries[0] {
		t.Errorf("lines %+v", lines)
	}

	// Without path: the root; without flags: neither recursive nor layers.
	if rec := do(t, b, http.MethodGet, "/wharf/images/app/files", nil, nil); rec.Code != http.StatusOK || got.Path != "/" || got.Recursive || got.Layers || got.Remote {
		t.Errorf("defaults: %d %+v", rec.Code, got)
	}
	// No entry: 200 and an empty stream.
	entries = nil
	if rec := do(t, b, http.MethodGet, "/wharf/images/app/files?path=/empty", nil, nil); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("empty: %d %q", rec.Code, rec.Body)
	}
}

func TestImageFilesRouteErrors(t *testing.T) {
	b := &fakeBackend{
		files: func(_ string, o types.FilesOptions, _ func(types.FileEntry) error) error {
			if o.Path == "/missing" {
				return fmt.Errorf("lstat /missing: %w", errdefs.ErrNotFound)
			}
			return nil
		},
		stat: func(_ string, o types.FilesOptions) (container.PathStat, error) {
			return container.PathStat{}, fmt.Errorf("stat %s: %w", o.Path, errdefs.ErrNotFound)
		},
		archive: func(_ string, o types.FilesOptions, _ func(container.PathStat) (io.Writer, error)) error {
			return fmt.Errorf("stat %s: %w", o.Path, errdefs.ErrNotFound)
		},
	}
	tests := []struct {
		name, method, path string
		status             int
		msg                string
	}{
		{"bad platform", http.MethodGet, `/wharf/images/app/files?platform={"os":`, 400, "failed to parse platform"},
		{"platform without os", http.MethodGet, `/wharf/images/app/files?platform={}`, 400, "os and architecture are empty"},
		{"two platforms", http.MethodGet, `/wharf/images/app/files?platform={"os":"linux","architecture":"amd64"}&platform={"os":"linux","architecture":"arm64"}`, 400, "only one platform"},
		{"NUL in path", http.MethodGet, "/wharf/images/app/files?path=/etc%00x", 400, "NUL"},
		{"path too long", http.MethodGet, "/wharf/images/app/files?path=/" + strings.Repeat("a", maxPathParam), 400, "longer than 4096"},
		{"missing path", http.MethodGet, "/wharf/images/app/files?path=/missing", 404, "lstat /missing"},
		{"archive without path", http.MethodGet, "/wharf/images/app/archive", 400, "'path' cannot be empty"},
		{"archive bad platform", http.MethodGet, `/wharf/images/app/archive?path=/&platform=linux`, 400, "failed to parse platform"},
		{"archive missing path", http.MethodGet, "/wharf/images/app/archive?path=/missing", 404, "stat /missing"},
		{"credentials over their cap", http.MethodGet, "/wharf/images/app/files?path=/&remote=1", 400, "larger than the 65536 allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.name == "credentials over their cap" {
				hdr["X-Registry-Auth"] = strings.Repeat("a", maxAuthHeader+1)
			}
			rec := do(t, b, tc.method, tc.path, nil, hdr)
			if rec.Code != tc.status {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			if m := message(t, rec); !strings.Contains(m, tc.msg) {
				t.Errorf("message %q, want %q in it", m, tc.msg)
			}
		})
	}
	// HEAD answers the status alone.
	if rec := do(t, b, http.MethodHead, "/wharf/images/app/archive?path=/missing", nil, nil); rec.Code != http.StatusNotFound || rec.Header().Get(pathStatHeader) != "" {
		t.Errorf("HEAD missing: %d %v", rec.Code, rec.Header())
	}
	if rec := do(t, &fakeBackend{}, http.MethodGet, "/wharf/images/app/files", nil, nil); rec.Code != http.StatusNotImplemented {
		t.Errorf("without the backend: %d", rec.Code)
	}
}

// An error after the first line aborts the answer (the connection is cut)
// instead of ending a stream a client would take for the whole listing.
func TestImageFilesRouteErrorAfterFirstLine(t *testing.T) {
	b := &fakeBackend{files: func(_ string, _ types.FilesOptions, emit func(types.FileEntry) error) error {
		if err := emit(types.FileEntry{Path: "/a", Type: types.FileTypeFile}); err != nil {
			return err
		}
		return errors.New("the registry went away")
	}}
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler", p)
		}
	}()
	do(t, b, http.MethodGet, "/wharf/images/app/files?path=/&recursive=1", nil, nil)
	t.Fatal("the handler returned")
}

func TestImageArchiveRoute(t *testing.T) {
	st := container.PathStat{Name: "os-release", Size: 5, Mode: 0o644, LinkTarget: "/usr/lib/os-release"}
	var got types.FilesOptions
	b := &fakeBackend{
		stat: func(_ string, o types.FilesOptions) (container.PathStat, error) { got = o; return st, nil },
		archive: func(_ string, o types.FilesOptions, start func(container.PathStat) (io.Writer, error)) error {
			got = o
			w, err := start(st)
			if err != nil {
				return err
			}
			_, err = io.WriteString(w, "tar bytes")
			return err
		},
	}
	want, _ := json.Marshal(st)
	for _, m := range []string{http.MethodHead, http.MethodGet} {
		rec := do(t, b, m, "/v1.50/wharf/images/app:1/archive?path=/etc/os-release&remote=1", nil, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", m, rec.Code, rec.Body)
		}
		h, err := base64.StdEncoding.DecodeString(rec.Header().Get(pathStatHeader))
		if err != nil || string(h) != string(want) {
			t.Errorf("%s: stat header %q (%v), want %s", m, h, err, want)
		}
		if got.Path != "/etc/os-release" || !got.Remote {
			t.Errorf("%s: options %+v", m, got)
		}
		if m == http.MethodGet && (rec.Body.String() != "tar bytes" || rec.Header().Get("Content-Type") != "application/x-tar") {
			t.Errorf("GET body %q type %q", rec.Body, rec.Header().Get("Content-Type"))
		}
	}
}

func TestImageArchiveRouteErrorAfterStart(t *testing.T) {
	b := &fakeBackend{archive: func(_ string, _ types.FilesOptions, start func(container.PathStat) (io.Writer, error)) error {
		w, err := start(container.PathStat{Name: "/"})
		if err != nil {
			return err
		}
		_, _ = io.WriteString(w, "half a tar")
		return errors.New("digest mismatch")
	}}
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler", p)
		}
	}()
	do(t, b, http.MethodGet, "/wharf/images/app/archive?path=/", nil, nil)
	t.Fatal("the handler returned")
}

// discardResponse counts what a handler writes (a recorder's growing
// buffer would be most of what a benchmark measures).
type discardResponse struct {
	header http.Header
	code   int
	n      int
}

func (d *discardResponse) Header() http.Header { return d.header }
func (d *discardResponse) WriteHeader(c int)   { d.code = c }
func (d *discardResponse) Write(p []byte) (int, error) {
	if d.code == 0 {
		d.code = http.StatusOK
	}
	d.n += len(p)
	return len(p), nil
}

// BenchmarkImageFilesRoute is the route's own cost per entry: JSON and the
// buffered writer.
func BenchmarkImageFilesRoute(b *testing.B) {
	const n = 100_000
	e := types.FileEntry{Path: "/usr/lib/python3.12/site-packages/pkg/module.py", Type: types.FileTypeFile, Mode: 0o644, Size: 12345,
		ModTime: "2024-03-01T10:20:00Z", Layer: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
	fb := &fakeBackend{files: func(_ string, _ types.FilesOptions, emit func(types.FileEntry) error) error {
		for range n {
			if err := emit(e); err != nil {
				return err
			}
		}
		return nil
	}}
	log := logrus.New()
	log.SetOutput(io.Discard)
	h := New(fb, Options{ServerVersion: "1.0-test", Logger: logrus.NewEntry(log)})
	b.ResetTimer()
	for range b.N {
		w := &discardResponse{header: http.Header{}}
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/wharf/images/app/files?path=/&recursive=1", nil))
		if w.code != http.StatusOK || w.n < n*100 {
			b.Fatal(w.code, w.n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
}
