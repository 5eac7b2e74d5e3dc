package client

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
)

func TestImageFilesQueryAndStream(t *testing.T) {
	r, c := newRecorder(t, 200, "application/x-ndjson",
		`{"Path":"/etc","Type":"dir","Mode":2147484141}`+"\n\n"+`{"Path":"/etc/hosts","Type":"file","Size":3,"Layer":"sha256:aa"}`+"\n")
	var got []types.FileEntry
	var raws []string
	err := c.ImageFiles(context.Background(), "localhost:5000/app:1", FilesOptions{Path: "/etc", Recursive: true, Layers: true, Remote: true,
		Auth: &registry.AuthConfig{Username: "u", Password: "p", ServerAddress: "localhost:5000"}}, func(e types.FileEntry, raw []byte) error {
		got = append(got, e)
		raws = append(raws, string(raw))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.last.URL.Path != "/wharf/images/localhost:5000/app:1/files" && !strings.HasSuffix(r.last.URL.Path, "/wharf/images/localhost:5000/app:1/files") {
		t.Errorf("path %s", r.last.URL.Path)
	}
	q := r.last.URL.Query()
	if q.Get("path") != "/etc" || q.Get("recursive") != "1" || q.Get("layers") != "1" || q.Get("remote") != "1" || r.last.Header.Get(AuthHeader) == "" {
		t.Errorf("query %v headers %v", q, r.last.Header)
	}
	if len(got) != 2 || got[1].Path != "/etc/hosts" || got[1].Layer != "sha256:aa" || !strings.HasPrefix(raws[0], `{"Path":"/etc",`) {
		t.Errorf("entries %+v raws %q", got, raws)
	}
}

// A listing the daemon cuts short is an error, never a shorter listing.
func TestImageFilesCutStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, `{"Path":"/a","Type":"file"}`+"\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer srv.Close()
	c, err := New("tcp://" + strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = c.ImageFiles(context.Background(), "app", FilesOptions{}, func(types.FileEntry, []byte) error { n++; return nil })
	if !errors.Is(err, io.ErrUnexpectedEOF) || n != 1 {
		t.Errorf("err %v after %d entries, want io.ErrUnexpectedEOF after 1", err, n)
	}
}

func TestImageArchiveAndStat(t *testing.T) {
	st := base64.StdEncoding.EncodeToString([]byte(`{"name":"hosts","size":3,"mode":420,"mtime":"2024-01-01T00:00:00Z","linkTarget":""}`))
	r, c := newRecorder(t, 200, "application/x-tar", "tar")
	r.headers = http.Header{PathStatHeader: {st}}
	rc, stat, err := c.ImageArchive(context.Background(), "app", FilesOptions{Path: "/etc/hosts"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "tar" || stat.Name != "hosts" || stat.Size != 3 || stat.Mode != 0o644 || r.last.Method != http.MethodGet {
		t.Errorf("body %q stat %+v method %s", b, stat, r.last.Method)
	}
	stat, err = c.ImageStat(context.Background(), "app", FilesOptions{Path: "/etc/hosts"})
	if err != nil || stat.Name != "hosts" || r.last.Method != http.MethodHead {
		t.Errorf("stat %+v %v %s", stat, err, r.last.Method)
	}
}

func TestImageStatErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		header  string
		wantMsg string
		wantErr error
	}{
		{"404 without body", 404, "", "Could not find the file /nope in image app", errdefs.ErrNotFound},
		{"no header", 200, "", "no X-Docker-Container-Path-Stat header", nil},
		{"not base64", 200, "!!", "decoding X-Docker-Container-Path-Stat", nil},
		{"not JSON", 200, base64.StdEncoding.EncodeToString([]byte("{")), "decoding X-Docker-Container-Path-Stat", nil},
		{"over the cap", 200, strings.Repeat("A", maxPathStatHeader+4), "over the 16384 allowed", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, c := newRecorder(t, tc.status, "", "")
			if tc.header != "" {
				r.headers = http.Header{PathStatHeader: {tc.header}}
			}
			_, err := c.ImageStat(context.Background(), "app", FilesOptions{Path: "/nope"})
			if err == nil || !strings.Contains(err.Error(), tc.wantMsg) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Errorf("err %v, want %q", err, tc.wantMsg)
			}
		})
	}
}
