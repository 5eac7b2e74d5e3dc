package indexcache

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/internal/layerindex"
)

func entryOf(name string) *Entry {
	return &Entry{Index: &layerindex.Index{
		Layer: digest.FromString(name), Source: layerindex.SourceStream, TarSize: -1,
		Entries: []layerindex.Entry{{Path: "/" + name, Type: layerindex.TypeDir, Mode: os.ModeDir | 0o755, HeaderOffset: -1, DataOffset: -1}},
	}}
}

func TestPutGetAndCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := entryOf("a")
	if err := c.Put(e); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(e.Index.Layer)
	if err != nil || got.Index.Entries[0].Path != "/a" || got.Gzip != nil {
		t.Fatalf("get: %+v %v", got, err)
	}
	p := c.path(e.Index.Layer)
	for name, edit := range map[string]func([]byte) []byte{
		"flipped byte": func(b []byte) []byte { b[30] ^= 1; return b },
		"truncated":    func(b []byte) []byte { return b[:len(b)-5] },
		"empty":        func([]byte) []byte { return nil },
		"another key":  func([]byte) []byte { b, _ := encode(entryOf("b")); return b },
	} {
		if err := c.Put(e); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		os.WriteFile(p, edit(b), 0o600)
		if _, err := c.Get(e.Index.Layer); !errdefs.IsNotFound(err) {
			t.Errorf("%s: err = %v, want NotFound", name, err)
		}
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) || c.Has(e.Index.Layer) {
			t.Errorf("%s: the corrupt file was kept", name)
		}
	}
}

func TestOpenDropsStrayFilesAndKeepsOrder(t *testing.T) {
	dir := t.TempDir()
	c, _ := Open(dir, Options{})
	c.touchEvery = 0
	for _, n := range []string{"a", "b"} {
		if err := c.Put(entryOf(n)); err != nil {
			t.Fatal(err)
		}
	}
	stray := filepath.Join(dir, "sha256", "nothex.tmp")
	os.WriteFile(stray, []byte("x"), 0o600)
	// "a" used last: after a restart "b" is the oldest.
	if _, err := c.Get(digest.FromString("a")); err != nil {
		t.Fatal(err)
	}
	_, one := c.Usage()
	c2, err := Open(dir, Options{Budget: one/2 + one/4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a stray file was kept")
	}
	if files, _ := c2.Usage(); files != 1 || !c2.Has(digest.FromString("a")) {
		t.Fatalf("%d files kept; want a", files)
	}
}

func FuzzDecode(f *testing.F) {
	b, _ := encode(entryOf("a"))
	f.Add(b)
	f.Add([]byte{})
	f.Add(append(magic[:], bytes.Repeat([]byte{0xff}, 20)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decode(bytes.NewReader(b), layerindex.Limits{MaxIndexBytes: 1 << 20})
		if err == nil && e.Index == nil {
			t.Fatal("nil index without an error")
		}
	})
}
