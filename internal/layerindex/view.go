package layerindex

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/containerd/errdefs"
)

// View is the merged filesystem of a stack of layer indexes, as a
// container sees it. It is built once by Merge and only read afterwards,
// so one View may serve concurrent requests.
//
// Layers are applied bottom first as containerd's and dockerd's appliers
// apply them to a directory (the vfs and native snapshotters), under the
// OCI image spec's whiteout rules:
//   - a layer's whiteouts hide only what lower layers put there: first
//     every whiteout of the layer is applied, then its entries, so a
//     whiteout never hides an entry of its own layer, wherever it sits in
//     the tar (containerd's applier removes a same-layer entry written
//     before its ".wh." name; the spec says it must not);
//   - ".wh.NAME" removes NAME and everything under it; ".wh..wh..opq"
//     empties its directory of lower content and keeps the directory;
//   - an entry replaces whatever a lower layer (or an earlier entry of its
//     own layer) had at its path, a directory's whole subtree included,
//     except that a directory over a directory keeps the children and takes
//     the upper metadata;
//   - a missing parent directory is created (mode 0755, root-owned, named
//     Implicit) and a parent that is a symlink is followed inside the root,
//     as the appliers' mkparent and RootPath do; a parent that is another
//     kind of file fails, as it does there;
//   - a hardlink shares the bytes its target held when the link's layer was
//     applied: a later layer that replaces the target does not change the
//     link (go-containerregistry#2002 gets this wrong);
//   - whiteouts are never themselves listed, in any layer (#1623).
type View struct {
	layers []*Index
	root   *node
	nodes  int
	lim    Limits
	// merging is set while Merge builds the view: only then does walk count
	// its steps against MaxMergeSteps (a built view is read-only).
	merging bool
	steps   int64
}

// ref is one entry of one layer of the stack.
type ref struct {
	layer int // index in the stack, bottom 0; -1 for the root nobody named
	e     *Entry
}

// node is one path of the merged tree. set.e is nil for an implicit
// directory; children is non-nil exactly for directories.
type node struct {
	name     string
	parent   *node
	set      ref
	content  ref // hardlinks: the entry whose bytes the link shares
	children map[string]*node
}

func (n *node) isDir() bool { return n.children != nil }

// effective is the entry that says what the node is: a hardlink is what
// its target is.
func (n *node) effective() *Entry {
	if n.set.e != nil && n.set.e.Type == TypeHardlink {
		return n.content.e
	}
	return n.set.e
}

func (n *node) isSymlink() bool {
	e := n.effective()
	return e != nil && e.Type == TypeSymlink
}

// Merge lays the indexes bottom first (layers[0] is the base layer) into
// one view. A view over no layers is an empty root directory.
func Merge(ctx context.Context, layers []*Index, lim Limits) (*View, error) {
	v := &View{
		layers: layers,
		root:   &node{set: ref{layer: -1}, children: map[string]*node{}},
		lim:    lim.orDefault(),
	}
	v.root.parent = v.root
	v.merging = true
	defer func() { v.merging = false }()
	for i, ix := range layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := v.apply(ctx, i, ix); err != nil {
			return nil, fmt.Errorf("layer %d (%s): %w", i, ix.Layer, err)
		}
	}
	return v, nil
}

// Layers are the indexes of the view, bottom first.
func (v *View) Layers() []*Index { return v.layers }

func (v *View) apply(ctx context.Context, i int, ix *Index) error {
	for j := range ix.Entries {
		var err error
		switch kind, target := ix.Entries[j].Whiteout(); kind {
		case WhiteoutFile:
			err = v.whiteout(target)
		case WhiteoutOpaque:
			err = v.opaque(target)
		}
		if err != nil {
			return err
		}
	}
	for j := range ix.Entries {
		if j%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		e := &ix.Entries[j]
		if kind, _ := e.Whiteout(); kind != NotWhiteout {
			continue
		}
		if err := v.add(i, e); err != nil {
			return err
		}
	}
	return nil
}

// whiteout removes p and its subtree. Its parent is resolved inside the
// root as the appliers do; a parent that does not exist hides nothing,
// and a whiteout creates nothing.
// A parent that is missing or not a directory hides nothing; one that
// cannot be resolved (a symlink loop) fails the layer, as it fails umoci.
func (v *View) whiteout(p string) error {
	dir, base := path.Split(p)
	parent, err := v.walk(dir, true, nil)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotDir) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("whiteout %.64q: %w", p, err)
	}
	v.remove(parent, base)
	return nil
}

// opaque empties the directory dir of what the layers below put there.
func (v *View) opaque(dir string) error {
	n, err := v.walk(dir+"/", true, nil)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotDir) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opaque directory %.64q: %w", dir, err)
	}
	for name := range n.children {
		v.remove(n, name)
	}
	return nil
}

func (v *View) remove(parent *node, name string) {
	n := parent.children[name]
	if n == nil {
		return
	}
	delete(parent.children, name)
	v.nodes -= count(n)
}

// count is the nodes of a subtree.
// It walks with a stack of its own: symlinked parents can make a tree
// deeper than any one path.
func count(n *node) int {
	c, stack := 0, []*node{n}
	for len(stack) > 0 {
		n, stack = stack[len(stack)-1], stack[:len(stack)-1]
		c++
		for _, ch := range n.children {
			stack = append(stack, ch)
		}
	}
	return c
}

func (v *View) add(i int, e *Entry) error {
	if e.Path == "/" {
		// A layer's "./" entry gives the root its metadata; a root that is
		// not a directory cannot be applied, and the appliers skip it.
		if e.Type == TypeDir {
			v.root.set = ref{i, e}
		}
		return nil
	}
	dir, base := path.Split(e.Path)
	parent, err := v.walk(dir, true, func(p *node, name string) (*node, error) {
		return v.insert(p, &node{name: name, set: ref{layer: i}, children: map[string]*node{}})
	})
	if err != nil {
		return fmt.Errorf("entry %.64q: %w", e.Path, err)
	}
	if old := parent.children[base]; old != nil {
		if old.isDir() && e.Type == TypeDir {
			old.set = ref{i, e}
			return nil
		}
		v.remove(parent, base)
	}
	n := &node{name: base, set: ref{i, e}}
	if e.Type == TypeDir {
		n.children = map[string]*node{}
	}
	if e.Type == TypeHardlink {
		if n.content, err = v.linkContent(e); err != nil {
			return err
		}
	}
	_, err = v.insert(parent, n)
	return err
}

// linkContent is the entry a hardlink shares its bytes with: its target
// as the view holds it now (the target's parents resolved inside the root,
// the target itself not followed), through any chain of hardlinks.
func (v *View) linkContent(e *Entry) (ref, error) {
	t, err := v.walk(e.Linkname, false, nil)
	if err != nil {
		return ref{}, fmt.Errorf("%w: %.64q → %.64q: %w%.0w", ErrBrokenHardlink, e.Path, e.Linkname, err, errdefs.ErrInvalidArgument)
	}
	if t.isDir() || t.set.e == nil {
		return ref{}, fmt.Errorf("%w: %.64q → %.64q is a directory%.0w", ErrBrokenHardlink, e.Path, e.Linkname, errdefs.ErrInvalidArgument)
	}
	if t.set.e.Type == TypeHardlink {
		return t.content, nil
	}
	return t.set, nil
}

func (v *View) insert(parent *node, n *node) (*node, error) {
	v.nodes++
	if v.nodes > v.lim.MaxViewNodes {
		return nil, limitErr("merged view over %d nodes", v.lim.MaxViewNodes)
	}
	n.parent = parent
	parent.children[n.name] = n
	return n, nil
}
