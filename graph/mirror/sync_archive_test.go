package mirror

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

type tarEntry struct {
	name string
	typ  byte
	data []byte
}

func makeTar(t testing.TB, entries []tarEntry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Size: int64(len(e.data)), Mode: 0o644}
		if typ == tar.TypeSymlink {
			h.Linkname, h.Size = "/etc/passwd", 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write(e.data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadLayoutArchive(t *testing.T) {
	blob := []byte("layer bytes")
	d := digest.FromBytes(blob)
	idx, _ := json.Marshal(ocispec.Index{Manifests: []ocispec.Descriptor{}})
	layout := tarEntry{name: "oci-layout", data: []byte(`{"imageLayoutVersion":"1.0.0"}`)}
	index := tarEntry{name: "index.json", data: idx}
	good := tarEntry{name: "blobs/sha256/" + d.Encoded(), data: blob}
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		ok      bool
	}{
		{"whole", []tarEntry{layout, {name: "blobs/", typ: tar.TypeDir}, good, index}, true},
		{"./ prefixes", []tarEntry{{name: "./oci-layout", data: layout.data}, {name: "./blobs/sha256/" + d.Encoded(), data: blob}, {name: "./index.json", data: idx}}, true},
		{"no index", []tarEntry{layout, good}, false},
		{"no oci-layout", []tarEntry{good, index}, false},
		{"wrong layout version", []tarEntry{{name: "oci-layout", data: []byte(`{"imageLayoutVersion":"9"}`)}, index}, false},
		{"blob not its digest", []tarEntry{layout, {name: "blobs/sha256/" + d.Encoded(), data: []byte("other")}, index}, false},
		{"traversal", []tarEntry{layout, {name: "../../etc/x", data: blob}, index}, false},
		{"traversal in blobs", []tarEntry{layout, {name: "blobs/sha256/../../../x", data: blob}, index}, false},
		{"symlink", []tarEntry{layout, {name: "blobs/sha256/" + d.Encoded(), typ: tar.TypeSymlink}, index}, false},
		{"bad algorithm", []tarEntry{layout, {name: "blobs/md5/abc", data: blob}, index}, false},
		{"other file", []tarEntry{layout, {name: "manifest.json", data: []byte("[]")}, index}, false},
		{"index not json", []tarEntry{layout, {name: "index.json", data: []byte("{")}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			la, err := readLayoutArchive(bytes.NewReader(makeTar(t, tc.entries)), dir)
			if !tc.ok {
				if !errdefs.IsInvalidArgument(err) {
					t.Fatalf("err = %v, want InvalidArgument", err)
				}
				// Nothing was written outside dir.
				if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "x")); err == nil {
					t.Fatal("a file was written outside the directory")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rc, err := la.open(t.Context(), ocispec.Descriptor{Digest: d, Size: int64(len(blob))}, 6)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			var got bytes.Buffer
			_, _ = got.ReadFrom(rc)
			if got.String() != "bytes" {
				t.Fatalf("read from 6: %q", got.String())
			}
		})
	}
}

func TestArchiveEntryName(t *testing.T) {
	for _, tc := range []struct {
		ann       map[string]string
		repo, tag string
		bad       bool
	}{
		{ann: map[string]string{ocispec.AnnotationRefName: "team/app:1.2", annotationSyncRepository: "registry.example/team/app"}, repo: "registry.example/team/app", tag: "1.2"},
		{ann: map[string]string{ocispec.AnnotationRefName: "team/app:1.2"}, repo: "docker.io/oci-archive/team/app", tag: "1.2"},
		{ann: map[string]string{ocispec.AnnotationRefName: "latest"}, repo: "docker.io/oci-archive/image", tag: "latest"},
		{ann: map[string]string{ocispec.AnnotationRefName: "host:5000/app"}, bad: true}, // ends in no tag
		{ann: nil, repo: "docker.io/oci-archive/image", tag: ""},
		{ann: map[string]string{ocispec.AnnotationRefName: "a:1", annotationSyncRepository: "Bad Name"}, bad: true},
	} {
		n, tag, err := archiveEntryName(ocispec.Descriptor{Digest: digest.FromString("m"), Annotations: tc.ann})
		if tc.bad {
			if !errdefs.IsInvalidArgument(err) {
				t.Errorf("%v: err = %v, want InvalidArgument", tc.ann, err)
			}
			continue
		}
		if err != nil || n.String() != tc.repo || tag != tc.tag {
			t.Errorf("%v: %v %q %v; want %s %q", tc.ann, n, tag, err, tc.repo, tc.tag)
		}
	}
}

// FuzzReadLayoutArchive: no panic, and nothing but dir's files written.
func FuzzReadLayoutArchive(f *testing.F) {
	blob := []byte("x")
	d := digest.FromBytes(blob)
	f.Add(makeTar(f, []tarEntry{{name: "oci-layout", data: []byte(`{"imageLayoutVersion":"1.0.0"}`)}, {name: "blobs/sha256/" + d.Encoded(), data: blob}, {name: "index.json", data: []byte(`{"manifests":[]}`)}}))
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, b []byte) {
		root := t.TempDir()
		dir := filepath.Join(root, "in")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		_, _ = readLayoutArchive(bytes.NewReader(b), dir)
		entries, _ := os.ReadDir(root)
		if len(entries) != 1 {
			t.Fatalf("%d entries beside the directory", len(entries)-1)
		}
	})
}
