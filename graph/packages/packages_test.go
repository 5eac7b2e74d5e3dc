package packages

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/types"
)

// mapFS is an image's files in memory.
type mapFS map[string]mapFile

type mapFile struct {
	data []byte
	mode uint32
}

func (m mapFS) Copy(ctx context.Context, p string, w io.Writer) error {
	f, ok := m[p]
	if !ok {
		return fmt.Errorf("%s: %w", p, errdefs.ErrNotFound)
	}
	_, err := io.Copy(w, bytes.NewReader(f.data))
	return err
}

func (m mapFS) Walk(ctx context.Context, fn func(types.FileEntry) error) error {
	for p, f := range m {
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		if err := fn(types.FileEntry{Path: p, Type: types.FileTypeFile, Mode: mode, Size: int64(len(f.data)), Layer: "sha256:l"}); err != nil {
			return err
		}
	}
	return nil
}

const debianRelease = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
ID=debian
`

const dpkgStatus = `Package: libc6
Status: install ok installed
Architecture: amd64
Source: glibc
Version: 2.36-9+deb12u4
Description: GNU C Library
 multi-line description

Package: bash
Status: install ok installed
Architecture: amd64
Version: 5.2.15-2+b2
Source: bash (5.2.15-2)

Package: gone
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0
`

func TestReadDpkgAsSyft(t *testing.T) {
	fs := mapFS{
		"/etc/os-release":                       {data: []byte(debianRelease)},
		"/var/lib/dpkg/status":                  {data: []byte(dpkgStatus)},
		"/var/lib/dpkg/status.d/tzdata":         {data: []byte("Package: tzdata\nVersion: 2024a-0+deb12u1\nArchitecture: all\n")},
		"/var/lib/dpkg/status.d/tzdata.md5sums": {data: []byte("0123  usr/share/zoneinfo/UTC\n")},
	}
	c, err := Read(context.Background(), fs, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range c.Packages {
		got[p.Name+"@"+p.Version] = p.PURL
	}
	want := map[string]string{
		"bash@5.2.15-2+b2":       "pkg:deb/debian/bash@5.2.15-2%2Bb2?arch=amd64&distro=debian-12&upstream=bash%405.2.15-2",
		"libc6@2.36-9+deb12u4":   "pkg:deb/debian/libc6@2.36-9%2Bdeb12u4?arch=amd64&distro=debian-12&upstream=glibc",
		"tzdata@2024a-0+deb12u1": "pkg:deb/debian/tzdata@2024a-0%2Bdeb12u1?arch=all&distro=debian-12",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if c.Distro == nil || c.Distro.ID != "debian" || c.Distro.VersionID != "12" {
		t.Fatalf("distro %+v", c.Distro)
	}
	if c.Packages[0].Layer != "sha256:l" {
		t.Fatalf("layer %q", c.Packages[0].Layer)
	}
}

func TestReadDpkgWithoutDistroHasNoPURL(t *testing.T) {
	c, err := Read(context.Background(), mapFS{"/var/lib/dpkg/status": {data: []byte(dpkgStatus)}}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Packages) != 2 || c.Packages[0].PURL != "" {
		t.Fatalf("%+v", c.Packages)
	}
}

func TestReadApkAsSyft(t *testing.T) {
	fs := mapFS{
		"/etc/os-release":       {data: []byte("ID=alpine\nVERSION_ID=3.20.3\nNAME=\"Alpine Linux\"\n")},
		"/lib/apk/db/installed": {data: []byte("C:Q1abc=\nP:musl\nV:1.2.5-r0\nA:x86_64\nL:MIT\no:musl\n\nP:libcrypto3\nV:3.3.2-r0\nA:x86_64\no:openssl\nbroken line\n")},
	}
	c, err := Read(context.Background(), fs, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pkg:apk/alpine/libcrypto3@3.3.2-r0?arch=x86_64&distro=alpine-3.20.3&upstream=openssl",
		"pkg:apk/alpine/musl@1.2.5-r0?arch=x86_64&distro=alpine-3.20.3",
	}
	var got []string
	for _, p := range c.Packages {
		got = append(got, p.PURL)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
}

func TestReadGoBinaryAsSyft(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	fs := mapFS{
		"/usr/bin/app":    {data: b, mode: 0o755},
		"/usr/bin/script": {data: []byte("#!/bin/sh\necho hi\n"), mode: 0o755},
	}
	c, err := Read(context.Background(), fs, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var stdlib bool
	for _, p := range c.Packages {
		if p.Type != types.PackageTypeGoModule {
			t.Fatalf("%+v", p)
		}
		if p.Name == "stdlib" {
			stdlib = p.PURL == "pkg:golang/stdlib@"+p.Version[2:]
		}
	}
	if !stdlib {
		t.Fatalf("no stdlib in %+v", c.Packages)
	}
}

func TestReadCapsTextDatabase(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxTextDB = 16
	c, err := Read(context.Background(), mapFS{"/var/lib/dpkg/status": {data: []byte(dpkgStatus)}}, lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Packages) != 0 {
		t.Fatalf("read past the cap: %+v", c.Packages)
	}
}

func TestReadCapsPackages(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxPackages = 1
	_, err := Read(context.Background(), mapFS{"/var/lib/dpkg/status": {data: []byte(dpkgStatus)}}, lim)
	if !errdefs.IsResourceExhausted(err) {
		t.Fatalf("err %v", err)
	}
}

func TestParseDpkgStatus(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []DpkgEntry
	}{
		{"empty", "", nil},
		{"no package", "Version: 1\n", nil},
		{"source with version", "Package: a\nVersion: 2\nSource: s (1.0-1)\n", []DpkgEntry{{Package: "a", Version: "2", Source: "s", SourceVersion: "1.0-1"}}},
		{"bitbake recipe", "Package: a\nVersion: 2\nSource: s_1.0.bb\n", []DpkgEntry{{Package: "a", Version: "2", Source: "s", SourceVersion: "1.0"}}},
		{"crlf and no trailing newline", "Package: a\r\nVersion: 1", []DpkgEntry{{Package: "a", Version: "1"}}},
		{"duplicate key stops", "Package: a\nPackage: b\n", nil},
		{"continuation first", " orphan\nPackage: a\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseDpkgStatus([]byte(tc.in)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v want %+v", got, tc.want)
			}
		})
	}
}

func TestParseOSRelease(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *Release
	}{
		{"empty", "", nil},
		{"quoted", "ID=\"ubuntu\"\nVERSION_ID='22.04'\nID_LIKE=debian\n", &Release{ID: "ubuntu", VersionID: "22.04", IDLike: []string{"debian"}}},
		{"comments and junk", "# c\nnonsense\nID=fedora\nBUILD_ID=rawhide\n", &Release{ID: "fedora", BuildID: "rawhide"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseOSRelease([]byte(tc.in)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v want %+v", got, tc.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	p := func(typ, name, version string) types.Package {
		return types.Package{Type: typ, Name: name, Version: version}
	}
	a := []types.Package{
		p("deb", "libc6", "2.36-9+deb12u3"), p("deb", "bash", "5.2.15-2"), p("deb", "gone", "1"),
		p("rpm", "zlib", "1:1.2.13-1"), p("apk", "musl", "1.2.5-r1"), p("go-module", "stdlib", "go1.22.9"),
		p("deb", "same", "1"),
	}
	b := []types.Package{
		p("deb", "libc6", "2.36-9+deb12u10"), p("deb", "bash", "5.2.15-1"), p("deb", "new", "1"),
		p("rpm", "zlib", "1:1.2.9-1"), p("apk", "musl", "1.2.5-r10"), p("go-module", "stdlib", "go1.22.10"),
		p("deb", "same", "1"),
	}
	d := Compare(a, b)
	want := &types.PackagesDiff{
		Added:   []types.Package{p("deb", "new", "1")},
		Removed: []types.Package{p("deb", "gone", "1")},
		Upgraded: []types.PackageChange{
			{Name: "musl", Type: "apk", From: "1.2.5-r1", To: "1.2.5-r10"},
			{Name: "libc6", Type: "deb", From: "2.36-9+deb12u3", To: "2.36-9+deb12u10"},
			{Name: "stdlib", Type: "go-module", From: "go1.22.9", To: "go1.22.10"},
		},
		Downgraded: []types.PackageChange{
			{Name: "bash", Type: "deb", From: "5.2.15-2", To: "5.2.15-1"},
			{Name: "zlib", Type: "rpm", From: "1:1.2.13-1", To: "1:1.2.9-1"},
		},
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("got %+v\nwant %+v", d, want)
	}
	if !Compare(a, a).Empty() {
		t.Fatal("a list differs from itself")
	}
}
