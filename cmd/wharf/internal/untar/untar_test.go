package untar

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ent is one tar entry of a test archive.
type ent struct {
	typ        byte
	name, link string
	body       string
	mode       int64
}

func archive(t testing.TB, es ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		mode := e.mode
		if mode == 0 {
			mode = 0o644
			if e.typ == tar.TypeDir {
				mode = 0o755
			}
		}
		h := &tar.Header{Typeflag: e.typ, Name: e.name, Linkname: e.link, Mode: mode, ModTime: time.Unix(1_600_000_000, 0)}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sandbox is a parent holding dest (where extraction goes) and outside
// (a sibling with one file, that nothing may touch).
func sandbox(t testing.TB) (parent, dest string) {
	t.Helper()
	parent = t.TempDir()
	dest = filepath.Join(parent, "dest")
	for _, d := range []string{dest, filepath.Join(parent, "outside")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(parent, "outside", "secret"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	return parent, dest
}

// assertContained fails when anything but dest and the untouched outside
// sibling exists under parent.
func assertContained(t testing.TB, parent string) {
	t.Helper()
	err := filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(parent, p)
		switch {
		case rel == ".", rel == "dest", strings.HasPrefix(rel, "dest"+string(filepath.Separator)), rel == "outside":
			return nil
		case rel == filepath.Join("outside", "secret"):
			if b, _ := os.ReadFile(p); string(b) != "keep" {
				t.Errorf("outside/secret was changed: %q", b)
			}
			return nil
		}
		t.Errorf("written outside dest: %s", rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestExtract(t *testing.T) {
	parent, dest := sandbox(t)
	a := archive(t,
		ent{typ: tar.TypeDir, name: "etc/"},
		ent{typ: tar.TypeReg, name: "etc/hosts", body: "127.0.0.1 localhost\n"},
		ent{typ: tar.TypeReg, name: "etc/su", body: "x", mode: 0o4755},
		ent{typ: tar.TypeLink, name: "etc/hosts.bak", link: "etc/hosts"},
		ent{typ: tar.TypeSymlink, name: "etc/os-release", link: "../usr/lib/os-release"},
		ent{typ: tar.TypeReg, name: "etc/deep/er/file", body: "parents made"},
		ent{typ: tar.TypeDir, name: "etc/ro/", mode: 0o555},
		ent{typ: tar.TypeReg, name: "etc/ro/f", body: "in a read-only dir"},
		ent{typ: tar.TypeChar, name: "etc/null"},
	)
	res, err := Extract(context.Background(), bytes.NewReader(a), dest, Options{Top: "etc", NewTop: "etc"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 1 {
		t.Errorf("skipped %d, want the char device", res.Skipped)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "etc/hosts.bak")); string(b) != "127.0.0.1 localhost\n" {
		t.Errorf("hardlink reads %q", b)
	}
	if fi, err := os.Stat(filepath.Join(dest, "etc/su")); err != nil || fi.Mode()&fs.ModeSetuid == 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("setuid file: %v %v", fi.Mode(), err)
	}
	if l, err := os.Readlink(filepath.Join(dest, "etc/os-release")); err != nil || l != "../usr/lib/os-release" {
		t.Errorf("symlink %q %v", l, err)
	}
	if fi, err := os.Stat(filepath.Join(dest, "etc/ro")); err != nil || fi.Mode().Perm() != 0o555 || !fi.ModTime().Equal(time.Unix(1_600_000_000, 0)) {
		t.Errorf("read-only dir: %v %v %v", fi.Mode(), fi.ModTime(), err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "etc/deep/er/file")); string(b) != "parents made" {
		t.Errorf("deep file %q", b)
	}
	_ = os.Chmod(filepath.Join(dest, "etc/ro"), 0o755) // for TempDir's cleanup
	assertContained(t, parent)
}

func TestExtractRenames(t *testing.T) {
	// A directory to a new name: its entries straight into dest.
	parent, dest := sandbox(t)
	a := archive(t, ent{typ: tar.TypeDir, name: "etc/"}, ent{typ: tar.TypeReg, name: "etc/hosts", body: "h"})
	if _, err := Extract(context.Background(), bytes.NewReader(a), dest, Options{Top: "etc"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "hosts")); string(b) != "h" {
		t.Errorf("hosts %q", b)
	}
	// A file to a new name, in dest's directory.
	a = archive(t, ent{typ: tar.TypeReg, name: "hosts", body: "h2"})
	if _, err := Extract(context.Background(), bytes.NewReader(a), dest, Options{Top: "hosts", NewTop: "myhosts", Single: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "myhosts")); string(b) != "h2" {
		t.Errorf("myhosts %q", b)
	}
	assertContained(t, parent)
}

func TestExtractRefusesHostileArchives(t *testing.T) {
	tests := []struct {
		name    string
		es      []ent
		opts    Options
		prepare func(t *testing.T, parent, dest string)
		hostile bool // ErrHostile; otherwise any error
	}{
		{name: "dot-dot", es: []ent{{typ: tar.TypeReg, name: "../outside/x", body: "x"}}, hostile: true},
		{name: "dot-dot inside", es: []ent{{typ: tar.TypeReg, name: "a/../../outside/x", body: "x"}}, hostile: true},
		{name: "absolute", es: []ent{{typ: tar.TypeReg, name: "/tmp/x", body: "x"}}, hostile: true},
		{name: "through an archive symlink, relative", es: []ent{
			{typ: tar.TypeSymlink, name: "l", link: "../outside"},
			{typ: tar.TypeReg, name: "l/secret", body: "overwritten"}}},
		{name: "through an archive symlink, absolute", es: []ent{
			{typ: tar.TypeSymlink, name: "l", link: "/"},
			{typ: tar.TypeReg, name: "l/tmp/x", body: "x"}}},
		{name: "directory through a symlink", es: []ent{
			{typ: tar.TypeSymlink, name: "l", link: "../outside"},
			{typ: tar.TypeDir, name: "l/newdir/"}}},
		{name: "through a symlink already in dest", es: []ent{{typ: tar.TypeReg, name: "pre/secret", body: "overwritten"}},
			prepare: func(t *testing.T, parent, dest string) {
				if err := os.Symlink(filepath.Join(parent, "outside"), filepath.Join(dest, "pre")); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "hardlink out", es: []ent{{typ: tar.TypeLink, name: "h", link: "../outside/secret"}}, hostile: true},
		{name: "hardlink to a file not extracted", es: []ent{{typ: tar.TypeLink, name: "h", link: "pre"}}, hostile: true,
			prepare: func(t *testing.T, _, dest string) {
				if err := os.WriteFile(filepath.Join(dest, "pre"), []byte("user's"), 0o600); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "hardlink through a symlink", es: []ent{
			{typ: tar.TypeSymlink, name: "l", link: "../outside"},
			{typ: tar.TypeLink, name: "h", link: "l/secret"}}, hostile: true},
		{name: "entry outside the copied path", es: []ent{{typ: tar.TypeReg, name: "other/x", body: "x"}}, opts: Options{Top: "etc"}, hostile: true},
		{name: "entry under a copied file", es: []ent{
			{typ: tar.TypeSymlink, name: "hosts", link: "."},
			{typ: tar.TypeReg, name: "hosts/x", body: "x"}}, opts: Options{Top: "hosts", NewTop: "new", Single: true}, hostile: true},
		{name: "name over the cap", es: []ent{{typ: tar.TypeReg, name: strings.Repeat("a/", maxName/2+1) + "f", body: "x"}}, hostile: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent, dest := sandbox(t)
			if tc.prepare != nil {
				tc.prepare(t, parent, dest)
			}
			_, err := Extract(context.Background(), bytes.NewReader(archive(t, tc.es...)), dest, tc.opts)
			if err == nil {
				t.Fatal("extracted")
			}
			if tc.hostile && !errors.Is(err, ErrHostile) {
				t.Errorf("err %v, want ErrHostile", err)
			}
			assertContained(t, parent)
		})
	}
}

func TestExtractReplacesNotFollows(t *testing.T) {
	// A file entry at the name of a symlink already in dest replaces the
	// link; it does not write through it.
	parent, dest := sandbox(t)
	if err := os.Symlink("../outside/secret", filepath.Join(dest, "f")); err != nil {
		t.Fatal(err)
	}
	a := archive(t, ent{typ: tar.TypeReg, name: "f", body: "new"})
	if _, err := Extract(context.Background(), bytes.NewReader(a), dest, Options{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dest, "f")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("f: %v %v", fi, err)
	}
	assertContained(t, parent)
}

func TestExtractHonoursContext(t *testing.T) {
	_, dest := sandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := archive(t, ent{typ: tar.TypeReg, name: "f", body: "x"})
	if _, err := Extract(ctx, bytes.NewReader(a), dest, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
}

// The archive of the root names its entries "/", "/etc/", …: with Top "/"
// those land in dest; any other absolute name, or a climb, is refused.
func TestExtractRoot(t *testing.T) {
	parent, dest := sandbox(t)
	a := archive(t,
		ent{typ: tar.TypeDir, name: "/"},
		ent{typ: tar.TypeDir, name: "/etc/"},
		ent{typ: tar.TypeReg, name: "/etc/hosts", body: "h"},
		ent{typ: tar.TypeSymlink, name: "/lib", link: "/usr/lib"},
	)
	if _, err := Extract(context.Background(), bytes.NewReader(a), dest, Options{Top: "/"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "etc/hosts")); string(b) != "h" {
		t.Errorf("etc/hosts %q", b)
	}
	if l, _ := os.Readlink(filepath.Join(dest, "lib")); l != "/usr/lib" {
		t.Errorf("lib -> %q", l)
	}
	assertContained(t, parent)
	for _, name := range []string{"etc/x", "/../outside/x", "//x/../../outside/y"} {
		_, err := Extract(context.Background(), bytes.NewReader(archive(t, ent{typ: tar.TypeReg, name: name, body: "x"})), dest, Options{Top: "/"})
		if !errors.Is(err, ErrHostile) {
			t.Errorf("%q: err %v, want ErrHostile", name, err)
		}
	}
	assertContained(t, parent)
}
