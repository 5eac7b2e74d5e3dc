package layerindex

import (
	"context"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
)

// Item is one path of the merged view.
type Item struct {
	// Entry is the entry that last set the path, its Path the view's path
	// (which differs from the tar name when a parent was a symlink).
	Entry
	// Layer is the digest of the layer that last set the path and
	// LayerIndex its place in the stack (bottom 0); -1 and "" for a root
	// no layer named.
	Layer      digest.Digest
	LayerIndex int
	// Implicit marks a directory no layer named, made for its children.
	Implicit bool
	// Content is, for a hardlink, the entry whose bytes it shares (the
	// target when the link's layer was applied); nil otherwise.
	Content *Located
}

// Bytes is the entry holding the item's content and the layer it is in:
// the hardlink's target for a hardlink, the item itself otherwise.
func (it *Item) Bytes() Located {
	if it.Content != nil {
		return *it.Content
	}
	return Located{Entry: it.Entry, Layer: it.Layer, LayerIndex: it.LayerIndex}
}

// Located is one entry of one layer of the stack.
type Located struct {
	Entry      Entry
	Layer      digest.Digest
	LayerIndex int
}

func (v *View) layerDigest(i int) digest.Digest {
	if i < 0 || i >= len(v.layers) {
		return ""
	}
	return v.layers[i].Layer
}

func (v *View) item(n *node, p string) Item {
	it := Item{Layer: v.layerDigest(n.set.layer), LayerIndex: n.set.layer}
	if n.set.e != nil {
		it.Entry = *n.set.e
	} else {
		it.Entry = Entry{Type: TypeDir, Mode: fs.ModeDir | 0o755, HeaderOffset: -1, DataOffset: -1}
		it.Implicit = n.parent != n
	}
	it.Path = p
	if n.content.e != nil {
		it.Content = &Located{Entry: *n.content.e, Layer: v.layerDigest(n.content.layer), LayerIndex: n.content.layer}
	}
	return it
}

// Lstat is the item at p, its parents resolved inside the root and p
// itself not followed unless it ends in "/" (docker cp's stat).
func (v *View) Lstat(p string) (Item, error) {
	n, err := v.walk(p, false, nil)
	if err != nil {
		return Item{}, err
	}
	return v.item(n, pathOf(n)), nil
}

// Stat is the item p resolves to, p itself followed too.
func (v *View) Stat(p string) (Item, error) {
	n, err := v.walk(p, true, nil)
	if err != nil {
		return Item{}, err
	}
	return v.item(n, pathOf(n)), nil
}

// Resolve is the path p resolves to inside the root (the last component
// followed when followFinal is set), and the file at it.
func (v *View) Resolve(p string, followFinal bool) (string, error) {
	n, err := v.walk(p, followFinal, nil)
	if err != nil {
		return "", err
	}
	return pathOf(n), nil
}

// List calls fn for each item under dir in order: depth first, a
// directory's names sorted bytewise, so "/a", "/a/b", "/a.b". dir itself
// is followed if it is a symlink (as ls DIR does) and is not listed; a dir
// that is a file lists that file alone. Non-recursive lists the direct
// children only. An error from fn stops the walk and is returned.
func (v *View) List(ctx context.Context, dir string, recursive bool, fn func(Item) error) error {
	n, err := v.walk(dir, true, nil)
	if err != nil {
		return err
	}
	p := pathOf(n)
	if !n.isDir() {
		return fn(v.item(n, p))
	}
	// The stack holds the children of each open directory in reverse
	// order, so popping yields them sorted.
	stack := pushChildren(nil, n, p)
	for k := 0; len(stack) > 0; k++ {
		if k%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if err := fn(v.item(f.n, f.p)); err != nil {
			return err
		}
		if recursive && f.n.isDir() {
			stack = pushChildren(stack, f.n, f.p)
		}
	}
	return nil
}

type frame struct {
	n *node
	p string
}

func pushChildren(stack []frame, n *node, p string) []frame {
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	prefix := strings.TrimSuffix(p, "/") + "/"
	for i := len(names) - 1; i >= 0; i-- {
		stack = append(stack, frame{n.children[names[i]], prefix + names[i]})
	}
	return stack
}

// ListLayer is one layer's own entries under dir (--layers), whiteouts
// included as the entries they are, in List's order. When the layer names
// a path twice, the later entry is the one listed, as applying it keeps
// the later one. Non-recursive lists the direct children only.
func ListLayer(ix *Index, dir string, recursive bool) []Entry {
	// ".." stops at the root here too.
	d := path.Clean("/" + dir)
	prefix := strings.TrimSuffix(d, "/") + "/"
	last := map[string]int{}
	for i := range ix.Entries {
		p := ix.Entries[i].Path
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		if !recursive && strings.Contains(p[len(prefix):], "/") {
			continue
		}
		last[p] = i
	}
	out := make([]Entry, 0, len(last))
	for _, i := range last {
		out = append(out, ix.Entries[i])
	}
	slices.SortFunc(out, func(a, b Entry) int { return ComparePaths(a.Path, b.Path) })
	return out
}

// ComparePaths orders paths as List walks them: component by component,
// so a directory's subtree comes before a sibling that sorts after its
// name ("/a/b" < "/a.b").
func ComparePaths(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		if ca < cb {
			return -1
		}
		return 1
	}
	return len(a) - len(b)
}
