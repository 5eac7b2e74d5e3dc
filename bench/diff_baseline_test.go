//go:build bench

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// writeLayout writes images (each a list of layers) into an OCI layout's
// blobs and returns their manifest digests.
func writeLayout(t *testing.T, dir string, images ...[][]layerFile) []string {
	t.Helper()
	put := func(b []byte, d string) {
		alg, enc, _ := strings.Cut(d, ":")
		if err := os.MkdirAll(filepath.Join(dir, "blobs", alg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "blobs", alg, enc), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	created := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	var out []string
	for _, layers := range images {
		var lbs []layerBlob
		for _, files := range layers {
			l, err := buildLayer(files, nil, created, false)
			if err != nil {
				t.Fatal(err)
			}
			put(l.Data, l.Digest)
			lbs = append(lbs, l)
		}
		img, err := assembleImage(ocispec.Platform{OS: "linux", Architecture: "amd64"}, ocispec.Image{}, lbs)
		if err != nil {
			t.Fatal(err)
		}
		put(img.Manifest.Data, img.Manifest.Digest)
		out = append(out, img.Manifest.Digest)
	}
	return out
}

func file(name, content string) layerFile {
	return layerFile{name: name, mode: 0o644, data: []byte(content)}
}

func TestLayoutDiff(t *testing.T) {
	base := []layerFile{file("/a/keep", "k"), file("/a/gone", "g"), file("/b/x", "x"), file("/b/y", "y"), file("/mode", "m")}
	tests := []struct {
		name                    string
		upper                   []layerFile
		changed, added, removed []string
	}{
		{name: "same", upper: nil},
		{name: "content", upper: []layerFile{file("/a/keep", "K")}, changed: []string{"/a/keep"}},
		{name: "mode only", upper: []layerFile{{name: "/mode", mode: 0o755, data: []byte("m")}}, changed: []string{"/mode"}},
		{name: "whiteout", upper: []layerFile{file("/a/.wh.gone", "")}, removed: []string{"/a/gone"}},
		{name: "whiteout of a directory", upper: []layerFile{file("/.wh.b", "")}, removed: []string{"/b", "/b/x", "/b/y"}},
		{name: "opaque directory", upper: []layerFile{file("/b/.wh..wh..opq", ""), file("/b/z", "z")},
			added: []string{"/b/z"}, removed: []string{"/b/x", "/b/y"}},
		{name: "added", upper: []layerFile{file("/new/f", "n")}, added: []string{"/new", "/new/f"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			to := [][]layerFile{base}
			if tc.upper != nil {
				to = append(to, tc.upper)
			}
			m := writeLayout(t, dir, [][]layerFile{base}, to)
			d, err := layoutDiff(dir, m[0], m[1])
			if err != nil {
				t.Fatal(err)
			}
			// The upper layer writes its parent directories again, with the
			// base's mode: the same entry, not a change.
			if !slices.Equal(d.changed, tc.changed) || !slices.Equal(d.added, tc.added) || !slices.Equal(d.removed, tc.removed) {
				t.Fatalf("changed %v added %v removed %v; want %v %v %v", d.changed, d.added, d.removed, tc.changed, tc.added, tc.removed)
			}
		})
	}
}

func TestLayoutDiffPackages(t *testing.T) {
	dir := t.TempDir()
	m := writeLayout(t, dir,
		[][]layerFile{{{name: diffStatusPath, mode: 0o644, data: dpkgStatus(5, diffVersionFrom, false)}}},
		[][]layerFile{{{name: diffStatusPath, mode: 0o644, data: dpkgStatus(5, diffVersionFrom, false)}},
			{{name: diffStatusPath, mode: 0o644, data: dpkgStatus(5, diffVersionTo, true)}}})
	d, err := layoutDiff(dir, m[0], m[1])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"+benchd", diffPackage + " " + diffVersionFrom + " -> " + diffVersionTo}
	if !slices.Equal(d.packages, want) || !slices.Equal(d.changed, []string{diffStatusPath}) {
		t.Fatalf("packages %v changed %v; want %v and the status", d.packages, d.changed, want)
	}
}

func TestDpkgVersions(t *testing.T) {
	tests := []struct {
		name, status string
		want         map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"one", "Package: a\nVersion: 1\n", map[string]string{"a": "1"}},
		{"version before package is dropped", "Version: 1\nPackage: a\n\nPackage: b\nVersion: 2\n", map[string]string{"b": "2"}},
		{"no version", "Package: a\nStatus: install ok installed\n\n", map[string]string{}},
		{"continuation lines", "Package: a\nDescription: x\n Version: 9\nVersion: 1\n", map[string]string{"a": "1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := dpkgVersions([]byte(tc.status))
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(tc.want)
			if string(gb) != string(wb) {
				t.Fatalf("%s, want %s", gb, wb)
			}
		})
	}
}

func TestPkgListReadsBothShapes(t *testing.T) {
	wharf := []byte(`{"Packages":[{"Name":"b","Version":"2","Type":"deb"},{"Name":"a","Version":"1","Type":"deb"}]}`)
	syft := []byte(`{"artifacts":[{"name":"a","version":"1","type":"deb"},{"name":"b","version":"2","type":"deb"}]}`)
	a, err := pkgList(wharf)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pkgList(syft)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) || len(a) != 2 {
		t.Fatalf("%v vs %v", a, b)
	}
	if ok, note := comparePackages(wharf, syft, 2); !ok {
		t.Fatal(note)
	}
	if ok, _ := comparePackages(wharf, []byte(`{"artifacts":[]}`), 2); ok {
		t.Fatal("an empty syft list compared equal")
	}
}

// The baseline's readers of other tools' output must not panic on any.
func FuzzDpkgVersions(f *testing.F) {
	f.Add([]byte("Package: a\nVersion: 1\n\n"))
	f.Add(dpkgStatus(3, diffVersionFrom, true))
	f.Fuzz(func(t *testing.T, b []byte) { dpkgVersions(b) })
}

func FuzzPkgList(f *testing.F) {
	f.Add([]byte(`{"Packages":[{"Name":"a","Version":"1","Type":"deb"}]}`))
	f.Add([]byte(`{"artifacts":[{"name":"a","version":"1","type":"deb"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := pkgList(b); err == nil {
			comparePackages(b, b, 0)
		}
	})
}
