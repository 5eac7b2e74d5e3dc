package diff

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/layerindex"
)

func file(p, body string, mode fs.FileMode) layerindex.Entry {
	return layerindex.Entry{Path: p, Type: layerindex.TypeFile, Mode: mode, Size: int64(len(body)), SHA256: sha256.Sum256([]byte(body)), HasDigest: true, HeaderOffset: -1, DataOffset: -1}
}

func owned(e layerindex.Entry, uid int64) layerindex.Entry { e.UID, e.GID = uid, uid; return e }

func dir(p string) layerindex.Entry {
	return layerindex.Entry{Path: p, Type: layerindex.TypeDir, Mode: fs.ModeDir | 0o755, HeaderOffset: -1, DataOffset: -1}
}

func sym(p, target string) layerindex.Entry {
	return layerindex.Entry{Path: p, Type: layerindex.TypeSymlink, Mode: fs.ModeSymlink | 0o777, Size: int64(len(target)), Linkname: target, HeaderOffset: -1, DataOffset: -1}
}

func hardlink(p, target string) layerindex.Entry {
	return layerindex.Entry{Path: p, Type: layerindex.TypeHardlink, Mode: 0o644, Linkname: target, HeaderOffset: -1, DataOffset: -1}
}

func wh(p string) layerindex.Entry {
	d, b := path.Split(p)
	return layerindex.Entry{Path: d + ".wh." + b, Type: layerindex.TypeFile, Mode: 0o644, HeaderOffset: -1, DataOffset: -1}
}

func opaque(d string) layerindex.Entry {
	return layerindex.Entry{Path: d + "/.wh..wh..opq", Type: layerindex.TypeFile, Mode: 0o644, HeaderOffset: -1, DataOffset: -1}
}

func layer(name string, es ...layerindex.Entry) *layerindex.Index {
	return &layerindex.Index{Layer: digest.FromString(name), Source: layerindex.SourceLayer, TarSize: -1, Entries: es}
}

// change is a FileChange as the tables write it.
type change struct {
	path, change, unindexed string
	what                    []string
}

func changesOf(d *types.FilesDiff) []change {
	var out []change
	for _, c := range d.Changes {
		out = append(out, change{c.Path, c.Change, c.Unindexed, c.What})
	}
	return out
}

var base = layer("base",
	dir("/etc"), file("/etc/passwd", "root:x:0:0\n", 0o644), file("/etc/app.conf", "v=1\n", 0o644),
	dir("/usr"), dir("/usr/bin"), file("/usr/bin/tool", "#!tool1", 0o755), sym("/usr/bin/t", "tool"),
	dir("/var"), dir("/var/cache"), file("/var/cache/a", "a", 0o644), file("/var/cache/b", "b", 0o644),
)

func TestFilesOverSharedLayers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to []*layerindex.Index
		want     []change
	}{
		{"the same image", nil, nil, nil},
		{"the same upper layer", []*layerindex.Index{layer("u", file("/x", "x", 0o644))}, []*layerindex.Index{layer("u", file("/x", "x", 0o644))}, nil},
		{"one file's content", []*layerindex.Index{layer("a", dir("/etc"), file("/etc/app.conf", "v=2\n", 0o644))}, []*layerindex.Index{layer("b", dir("/etc"), file("/etc/app.conf", "v=3\n", 0o644))},
			[]change{{"/etc/app.conf", "changed", "", []string{"content"}}}},
		{"a path only to's layers touch, against the shared layers", nil, []*layerindex.Index{layer("b", dir("/etc"), file("/etc/app.conf", "v=10\n", 0o600))},
			[]change{{"/etc/app.conf", "changed", "", []string{"size", "mode", "content"}}}},
		{"added and removed", []*layerindex.Index{layer("a", file("/old", "o", 0o644))}, []*layerindex.Index{layer("b", file("/new", "n", 0o644))},
			[]change{{"/new", "added", "", nil}, {"/old", "removed", "", nil}}},
		{"a whiteout over the shared layers", nil, []*layerindex.Index{layer("b", wh("/etc/passwd"))},
			[]change{{"/etc/passwd", "removed", "", nil}}},
		{"a whited-out directory lists its contents", nil, []*layerindex.Index{layer("b", wh("/var/cache"))},
			[]change{{"/var/cache", "removed", "", nil}, {"/var/cache/a", "removed", "", nil}, {"/var/cache/b", "removed", "", nil}}},
		{"an opaque directory hides what the shared layers held", nil, []*layerindex.Index{layer("b", dir("/var/cache"), opaque("/var/cache"), file("/var/cache/b", "b", 0o644))},
			[]change{{"/var/cache/a", "removed", "", nil}}},
		{"owner, link and type", nil, []*layerindex.Index{layer("b", owned(file("/etc/passwd", "root:x:0:0\n", 0o644), 1000), sym("/usr/bin/t", "tool2"), dir("/usr/bin/tool"))},
			[]change{{"/etc/passwd", "changed", "", []string{"owner"}}, {"/usr/bin/t", "changed", "", []string{"size", "link"}}, {"/usr/bin/tool", "changed", "", []string{"type"}}}},
		{"a hardlink is its target", []*layerindex.Index{layer("a", file("/h", "same", 0o644), hardlink("/h2", "/h"))}, []*layerindex.Index{layer("b", file("/h", "same", 0o644), file("/h2", "same", 0o644))},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Files(context.Background(), []*layerindex.Index{base}, tc.from, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			if got := changesOf(d); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("changes\n got %v\nwant %v", got, tc.want)
			}
			if !d.SharedCompared {
				t.Fatal("SharedCompared unset with the shared layers given")
			}
		})
	}
}

// Without the shared layers' indexes, what the upper layers name is
// compared, and the side that would read the shared layers is named.
func TestFilesOfUpperLayersOnly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to []*layerindex.Index
		want     []change
	}{
		{"both touch one file", []*layerindex.Index{layer("a", dir("/etc"), file("/etc/app.conf", "v=2\n", 0o644))}, []*layerindex.Index{layer("b", dir("/etc"), file("/etc/app.conf", "v=3\n", 0o644))},
			[]change{{"/etc/app.conf", "changed", "", []string{"content"}}}},
		{"only to touches a file; its directory is no change", nil, []*layerindex.Index{layer("b", dir("/etc"), file("/etc/app.conf", "v=3\n", 0o644))},
			[]change{{"/etc/app.conf", "added", "from", nil}}},
		{"only from touches a file", []*layerindex.Index{layer("a", file("/x", "x", 0o644))}, nil,
			[]change{{"/x", "removed", "to", nil}}},
		{"to whites out a shared path", nil, []*layerindex.Index{layer("b", wh("/etc/passwd"))},
			[]change{{"/etc/passwd", "removed", "from", nil}}},
		{"from whited out a shared path", []*layerindex.Index{layer("a", wh("/etc/passwd"))}, nil,
			[]change{{"/etc/passwd", "added", "to", nil}}},
		{"from's file, to's whiteout", []*layerindex.Index{layer("a", file("/x", "x", 0o644))}, []*layerindex.Index{layer("b", wh("/x"))},
			[]change{{"/x", "removed", "", nil}}},
		{"both white it out", []*layerindex.Index{layer("a", wh("/x"))}, []*layerindex.Index{layer("b", wh("/x"))}, nil},
		{"a whiteout then the path again", nil, []*layerindex.Index{layer("b1", wh("/x")), layer("b2", file("/x", "x2", 0o644))},
			[]change{{"/x", "added", "from", nil}}},
		{"the same layers", []*layerindex.Index{layer("u", file("/x", "x", 0o644))}, []*layerindex.Index{layer("u", file("/x", "x", 0o644))}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Files(context.Background(), nil, tc.from, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			if got := changesOf(d); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("changes\n got %v\nwant %v", got, tc.want)
			}
			if d.SharedCompared {
				t.Fatal("SharedCompared set without the shared layers")
			}
		})
	}
}

func TestFilesCountsEachLayerIndexedOnce(t *testing.T) {
	u := layer("u", file("/x", "x", 0o644))
	d, err := Files(context.Background(), nil, []*layerindex.Index{u, layer("a")}, []*layerindex.Index{u})
	if err != nil {
		t.Fatal(err)
	}
	if d.LayersIndexed != 2 {
		t.Fatalf("LayersIndexed %d, want 2", d.LayersIndexed)
	}
}

func TestFilesStopAtTheirCap(t *testing.T) {
	es := make([]layerindex.Entry, 0, maxFileChanges+1)
	for i := range maxFileChanges + 1 {
		es = append(es, file(fmt.Sprintf("/f%07d", i), "x", 0o644))
	}
	d, err := Files(context.Background(), []*layerindex.Index{}, nil, []*layerindex.Index{layer("big", es...)})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Truncated || len(d.Changes) != maxFileChanges {
		t.Fatalf("Truncated %v with %d changes, want true with %d", d.Truncated, len(d.Changes), maxFileChanges)
	}
}

func TestFilesHonourCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Files(ctx, []*layerindex.Index{base}, nil, nil); err == nil {
		t.Fatal("a cancelled diff answered")
	}
}
