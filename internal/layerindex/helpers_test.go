package layerindex

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
)

// tf is one tar entry a test writes with archive/tar. typ defaults to a
// regular file, or a directory when the name ends in "/".
type tf struct {
	name string
	typ  byte
	body string
	link string
	mode int64
	uid  int
	// format forces a tar format (tar.FormatGNU for GNU long names); the
	// default lets archive/tar choose (PAX when a name is too long).
	format tar.Format
}

func file(name, body string) tf  { return tf{name: name, typ: tar.TypeReg, body: body} }
func dir(name string) tf         { return tf{name: name, typ: tar.TypeDir} }
func symlink(name, to string) tf { return tf{name: name, typ: tar.TypeSymlink, link: to} }
func hardlink(name, to string) tf {
	return tf{name: name, typ: tar.TypeLink, link: to}
}
func whiteout(name string) tf { return file(name, "") }

var testTime = time.Unix(1700000000, 0)

func header(e tf) *tar.Header {
	typ := e.typ
	if typ == 0 {
		typ = tar.TypeReg
		if strings.HasSuffix(e.name, "/") {
			typ = tar.TypeDir
		}
	}
	mode := e.mode
	if mode == 0 {
		mode = 0o644
		if typ == tar.TypeDir {
			mode = 0o755
		}
	}
	h := &tar.Header{Name: e.name, Typeflag: typ, Linkname: e.link, Mode: mode, Uid: e.uid, ModTime: testTime, Format: e.format}
	if typ == tar.TypeReg {
		h.Size = int64(len(e.body))
	}
	return h
}

// tarOf is a layer tar of the entries, in order.
func tarOf(t testing.TB, ents ...tf) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		if err := tw.WriteHeader(header(e)); err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// layer is one built layer: its tar and its index.
type layer struct {
	raw []byte
	ix  *Index
}

func buildLayer(t testing.TB, raw []byte) layer {
	t.Helper()
	ix, err := Build(context.Background(), bytes.NewReader(raw), Limits{})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	ix.Layer = digest.FromBytes(raw)
	return layer{raw, ix}
}

func mergeLayers(t testing.TB, layers ...[]tf) (*View, []layer) {
	t.Helper()
	var ls []layer
	var ixs []*Index
	for _, ents := range layers {
		l := buildLayer(t, tarOf(t, ents...))
		ls = append(ls, l)
		ixs = append(ixs, l.ix)
	}
	v, err := Merge(context.Background(), ixs, Limits{})
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	return v, ls
}

// contentOf reads an item's bytes from its layer's tar at the offsets the
// index recorded: the offsets are checked by every listing.
func contentOf(t testing.TB, ls []layer, it Item) string {
	t.Helper()
	loc := it.Bytes()
	e := loc.Entry
	if e.Type != TypeFile {
		return ""
	}
	raw := ls[loc.LayerIndex].raw
	off, n, ok := e.DataRange()
	if !ok || off+n > int64(len(raw)) {
		t.Fatalf("%s: data range %d+%d (%v) outside the %d-byte layer", it.Path, off, n, ok, len(raw))
	}
	b := raw[off : off+n]
	if digest.FromBytes(b) != e.Digest() {
		t.Fatalf("%s: bytes at the offset do not match the recorded digest", it.Path)
	}
	return string(b)
}

// describe is a listing line: path, effective type, and the symlink target
// or the file's content.
func describe(t testing.TB, ls []layer, it Item) string {
	typ := it.Type
	if it.Content != nil {
		typ = it.Content.Entry.Type
	}
	switch typ {
	case TypeFile:
		return fmt.Sprintf("%s file=%s", it.Path, contentOf(t, ls, it))
	case TypeSymlink:
		link := it.Linkname
		if it.Content != nil {
			link = it.Content.Entry.Linkname
		}
		return fmt.Sprintf("%s symlink=%s", it.Path, link)
	}
	return fmt.Sprintf("%s %s", it.Path, typ)
}

func listing(t testing.TB, v *View, ls []layer) []string {
	t.Helper()
	var out []string
	err := v.List(context.Background(), "/", true, func(it Item) error {
		out = append(out, describe(t, ls, it))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
