package layerindex

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

// mergeCases are the whiteout, opaque and replacement rules, each an image
// (layers bottom first) and the merged listing a container sees. The
// umoci oracle (oracle_test.go) unpacks the same images.
var mergeCases = []struct {
	name   string
	layers [][]tf
	want   []string
}{
	{
		name:   "whiteout a file",
		layers: [][]tf{{dir("a/"), file("a/x", "1"), file("a/y", "2")}, {dir("a/"), whiteout("a/.wh.x")}},
		want:   []string{"/a dir", "/a/y file=2"},
	},
	{
		name:   "whiteout a directory a lower layer filled",
		layers: [][]tf{{dir("d/"), dir("d/e/"), file("d/e/f", "1"), file("keep", "k")}, {whiteout(".wh.d")}},
		want:   []string{"/keep file=k"},
	},
	{
		// go-containerregistry#1897.
		name:   "opaque directory",
		layers: [][]tf{{dir("a/"), dir("a/b/"), file("a/b/foo", "1"), file("a/c", "2")}, {dir("a/"), whiteout("a/.wh..wh..opq"), file("a/new", "3")}},
		want:   []string{"/a dir", "/a/new file=3"},
	},
	{
		// An opaque marker after its layer's own entries keeps them.
		name:   "opaque marker after the layer's entries",
		layers: [][]tf{{dir("a/"), file("a/old", "1")}, {dir("a/"), file("a/new", "3"), whiteout("a/.wh..wh..opq")}},
		want:   []string{"/a dir", "/a/new file=3"},
	},
	{
		// go-containerregistry#1623: a single layer's whiteouts are not files.
		name:   "whiteouts in the only layer are not listed",
		layers: [][]tf{{dir("root/"), whiteout("root/.wh..wh..opq"), file("root/f", "1"), dir("m/"), whiteout("m/.wh.gone")}},
		want:   []string{"/m dir", "/root dir", "/root/f file=1"},
	},
	{
		// go-containerregistry#2029: mkdir test; add a file; rm -rf test;
		// mkdir test; add another.
		name: "directory deleted and made again",
		layers: [][]tf{
			{dir("bin/"), file("bin/sh", "sh")},
			{dir("test/")},
			{dir("test/"), file("test/hello.txt", "Hello World")},
			{whiteout(".wh.test")},
			{dir("test/")},
			{dir("test/"), file("test/hello2.txt", "Hello World")},
		},
		want: []string{"/bin dir", "/bin/sh file=sh", "/test dir", "/test/hello2.txt file=Hello World"},
	},
	{
		// go-containerregistry#2191: the directory comes back only as a
		// parent of a new file.
		name:   "whited-out directory made again as an implicit parent",
		layers: [][]tf{{file("a/foo", "1"), file("b/bar", "2")}, {whiteout(".wh.a")}, {file("a/baz", "3")}},
		want:   []string{"/a dir", "/a/baz file=3", "/b dir", "/b/bar file=2"},
	},
	{
		name:   "file replaced by a directory",
		layers: [][]tf{{file("x", "1")}, {dir("x/"), file("x/y", "2")}},
		want:   []string{"/x dir", "/x/y file=2"},
	},
	{
		name:   "directory replaced by a file",
		layers: [][]tf{{dir("x/"), dir("x/sub/"), file("x/sub/y", "2")}, {file("x", "1")}},
		want:   []string{"/x file=1"},
	},
	{
		name:   "directory over a directory keeps the children",
		layers: [][]tf{{dir("x/"), file("x/a", "1")}, {dir("x/"), file("x/b", "2")}},
		want:   []string{"/x dir", "/x/a file=1", "/x/b file=2"},
	},
	{
		name:   "symlink replaced by a directory",
		layers: [][]tf{{dir("tmp/"), symlink("l", "/tmp")}, {dir("l/"), file("l/f", "1")}},
		want:   []string{"/l dir", "/l/f file=1", "/tmp dir"},
	},
	{
		// The appliers resolve a parent inside the root: the file lands in
		// the symlink's target.
		name:   "entry under a symlinked parent",
		layers: [][]tf{{dir("real/"), symlink("l", "real")}, {file("l/f", "1")}},
		want:   []string{"/l symlink=real", "/real dir", "/real/f file=1"},
	},
	{
		// The OCI spec: a whiteout hides only lower layers, wherever it
		// sits in its own layer's tar.
		name:   "whiteout does not hide its own layer's entry",
		layers: [][]tf{{file("a", "old")}, {file("a", "new"), whiteout(".wh.a")}},
		want:   []string{"/a file=new"},
	},
	{
		// go-containerregistry#2002: a link keeps the bytes its target had.
		name:   "hardlinks keep their target's old bytes",
		layers: [][]tf{{file("t1", "123"), hardlink("t2", "t1"), hardlink("t3", "t2")}, {file("t1", "456")}},
		want:   []string{"/t1 file=456", "/t2 file=123", "/t3 file=123"},
	},
	{
		name:   "hardlink to a lower layer's file",
		layers: [][]tf{{dir("etc/"), file("etc/a", "A")}, {hardlink("b", "etc/a")}},
		want:   []string{"/b file=A", "/etc dir", "/etc/a file=A"},
	},
	{
		name:   "empty layer",
		layers: [][]tf{{file("a", "1")}, {}},
		want:   []string{"/a file=1"},
	},
	{
		name:   "whiteout of a missing path creates nothing",
		layers: [][]tf{{file("a", "1")}, {whiteout("nope/.wh.x"), whiteout(".wh.y")}},
		want:   []string{"/a file=1"},
	},
	{
		name:   "a later entry of one layer wins",
		layers: [][]tf{{file("a", "1"), file("a", "2")}},
		want:   []string{"/a file=2"},
	},
	{
		name:   "AUFS bookkeeping is skipped",
		layers: [][]tf{{dir(".wh..wh.plnk/"), file(".wh..wh.aufs", ""), file("a", "1")}},
		want:   []string{"/a file=1"},
	},
	{
		name:   "names sort depth first",
		layers: [][]tf{{file("a.b", "1"), dir("a/"), file("a/b", "2"), file("a-", "3")}},
		want:   []string{"/a dir", "/a/b file=2", "/a-  file=3", "/a.b file=1"},
	},
}

func TestMerge(t *testing.T) {
	for _, tc := range mergeCases {
		t.Run(tc.name, func(t *testing.T) {
			v, ls := mergeLayers(t, tc.layers...)
			got := listing(t, v, ls)
			want := fixSpaces(tc.want)
			if !slices.Equal(got, want) {
				t.Fatalf("listing\n got  %q\n want %q", got, want)
			}
		})
	}
}

// fixSpaces lets a table line pad a name for readability.
func fixSpaces(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = strings.Replace(s, "  ", " ", 1)
	}
	return out
}

func TestMergeNamesTheLayerThatLastSetEachPath(t *testing.T) {
	v, ls := mergeLayers(t,
		[]tf{dir("x/"), file("x/a", "1"), file("keep", "k")},
		[]tf{{name: "x/", typ: '5', mode: 0o700}, file("x/b", "2")},
		[]tf{file("y/z", "3")},
	)
	cases := map[string]struct {
		layer    int
		mode     fs.FileMode
		implicit bool
	}{
		"/x":    {1, fs.ModeDir | 0o700, false},
		"/x/a":  {0, 0o644, false},
		"/x/b":  {1, 0o644, false},
		"/keep": {0, 0o644, false},
		"/y":    {2, fs.ModeDir | 0o755, true},
		"/y/z":  {2, 0o644, false},
	}
	for p, want := range cases {
		it, err := v.Lstat(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if it.LayerIndex != want.layer || it.Layer != ls[want.layer].ix.Layer || it.Mode != want.mode || it.Implicit != want.implicit {
			t.Errorf("%s: layer %d %s mode %v implicit %v, want layer %d mode %v implicit %v", p, it.LayerIndex, it.Layer, it.Mode, it.Implicit, want.layer, want.mode, want.implicit)
		}
	}
	root, err := v.Lstat("/")
	if err != nil || root.Type != TypeDir || root.LayerIndex != -1 || root.Implicit {
		t.Fatalf("root: %+v, %v", root, err)
	}
}

func TestMergeRefuses(t *testing.T) {
	cases := []struct {
		name   string
		layers [][]tf
		want   error
	}{
		{"hardlink to nothing", [][]tf{{hardlink("a", "nope")}}, ErrBrokenHardlink},
		{"hardlink to a directory", [][]tf{{dir("d/"), hardlink("a", "d")}}, ErrBrokenHardlink},
		{"hardlink to its own path", [][]tf{{hardlink("a", "a")}}, ErrBrokenHardlink},
		{"parent is a file", [][]tf{{file("f", "1")}, {file("f/x", "2")}}, ErrNotDir},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ixs []*Index
			for _, ents := range tc.layers {
				ixs = append(ixs, buildLayer(t, tarOf(t, ents...)).ix)
			}
			_, err := Merge(context.Background(), ixs, Limits{})
			if !errors.Is(err, tc.want) || !errdefs.IsInvalidArgument(err) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestMergeCapsNodes(t *testing.T) {
	// One 4096-byte path of one-letter directories implies 2,047 parents.
	deep := strings.Repeat("a/", 2047) + "f"
	ix := buildLayer(t, tarOf(t, file(deep, "x"))).ix
	_, err := Merge(context.Background(), []*Index{ix}, Limits{MaxViewNodes: 1000})
	if !errors.Is(err, ErrLimit) || !errdefs.IsResourceExhausted(err) {
		t.Fatalf("err = %v, want ErrLimit", err)
	}
	v, err := Merge(context.Background(), []*Index{ix}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if it, err := v.Stat("/" + deep); err != nil || it.Type != TypeFile {
		t.Fatalf("deep file: %+v %v", it, err)
	}
}

func TestListLayerShowsWhiteouts(t *testing.T) {
	l := buildLayer(t, tarOf(t, dir("a/"), whiteout("a/.wh.x"), whiteout("a/.wh..wh..opq"), file("a/y", "1"), file("a/y", "2"), file("b", "3")))
	got := ListLayer(l.ix, "/a", false)
	var names []string
	for _, e := range got {
		kind, target := e.Whiteout()
		names = append(names, e.Path+" "+kindName(kind)+" "+target)
	}
	want := []string{"/a/.wh..wh..opq opaque /a", "/a/.wh.x whiteout /a/x", "/a/y file "}
	if !slices.Equal(names, want) {
		t.Fatalf("got %q, want %q", names, want)
	}
	if got[2].Size != 1 || contentOf(t, []layer{l}, Item{Entry: got[2]}) != "2" {
		t.Fatalf("the later /a/y is not the one listed: %+v", got[2])
	}
	if all := ListLayer(l.ix, "/", true); len(all) != 5 {
		t.Fatalf("recursive: %d entries, want 5", len(all))
	}
}

func kindName(k WhiteoutKind) string {
	return map[WhiteoutKind]string{NotWhiteout: "file", WhiteoutFile: "whiteout", WhiteoutOpaque: "opaque", WhiteoutMeta: "meta"}[k]
}

func TestListNonRecursiveAndStopping(t *testing.T) {
	v, _ := mergeLayers(t, []tf{dir("d/"), file("d/b", "1"), file("d/a", "2"), dir("d/c/"), file("d/c/x", "3"), symlink("ld", "d"), file("f", "4")})
	var got []string
	collect := func(it Item) error { got = append(got, it.Path); return nil }
	if err := v.List(context.Background(), "/ld", false, collect); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/d/a", "/d/b", "/d/c"}; !slices.Equal(got, want) {
		t.Fatalf("List(/ld) = %q, want %q", got, want)
	}
	got = nil
	if err := v.List(context.Background(), "/f", true, collect); err != nil || !slices.Equal(got, []string{"/f"}) {
		t.Fatalf("List(/f) = %q %v", got, err)
	}
	stop := errors.New("stop")
	n := 0
	err := v.List(context.Background(), "/", true, func(Item) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("List did not stop: %v after %d", err, n)
	}
	if err := v.List(context.Background(), "/nope", true, collect); !errors.Is(err, ErrNotFound) || !errdefs.IsNotFound(err) {
		t.Fatalf("List(/nope): %v", err)
	}
}

// A layer whose every entry sits under a 40-hop chain of 4096-byte
// symlink targets costs Merge about 80k steps an entry: the step cap
// stops it with a clear error in bounded time.
func TestMergeCapsSymlinkWork(t *testing.T) {
	pad := strings.Repeat("./", 2000)
	var chain []tf
	for i := 0; i < MaxSymlinkHops-1; i++ {
		chain = append(chain, symlink(fmt.Sprintf("s%d", i), pad+fmt.Sprintf("s%d", i+1)))
	}
	chain = append(chain, symlink(fmt.Sprintf("s%d", MaxSymlinkHops-1), pad+"d"), dir("d/"))
	var many []tf
	for i := 0; i < 2000; i++ {
		many = append(many, file(fmt.Sprintf("s0/f%d", i), ""))
	}
	ixs := []*Index{buildLayer(t, tarOf(t, chain...)).ix, buildLayer(t, tarOf(t, many...)).ix}
	start := time.Now()
	_, err := Merge(context.Background(), ixs, Limits{})
	if !errors.Is(err, ErrLimit) || !errdefs.IsResourceExhausted(err) {
		t.Fatalf("err = %v, want ErrLimit", err)
	}
	t.Logf("refused after %v: %v", time.Since(start), err)
	v, err := Merge(context.Background(), []*Index{ixs[0], buildLayer(t, tarOf(t, many[:10]...)).ix}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := v.Resolve("/s0/f9", false); err != nil || p != "/d/f9" {
		t.Fatalf("Resolve = %q, %v", p, err)
	}
}
