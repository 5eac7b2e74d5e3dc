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
// Layers are applied bottom first, each in tar order, as umoci applies
// them to a directory (and as containerd's and dockerd's appliers do for
// the vfs and native snapshotters), under the OCI image spec's whiteout
// rules:
//   - ".wh.NAME" removes NAME and everything under it; ".wh..wh..opq"
//     empties its directory and keeps the directory;
//   - a whiteout never removes what its own layer wrote, wherever it sits
//     in the tar: a path the layer has touched (written, or an ancestor of
//     one written) stays, and only its untouched contents go. This is
//     umoci's rule and the spec's ("whiteout files MUST only apply to
//     resources in lower/parent layers"); containerd's applier removes a
//     same-layer entry written before its ".wh." name;
//   - an entry replaces whatever a lower layer (or an earlier entry of its
//     own layer) had at its path, a directory's whole subtree included,
//     except that a directory over a directory keeps the children and takes
//     the upper metadata;
//   - a missing parent directory is created (mode 0755, root-owned, named
//     Implicit) and a parent that is a symlink is followed inside the root,
//     as the appliers' mkparent and SecureJoin do (overlayfs would hide
//     the symlink under a new directory instead; real diffs never rely on
//     either); a parent that is another kind of file fails, as it does
//     there. A whiteout creates nothing;
//   - a hardlink shares the bytes its target held when the link was
//     applied: a later layer that replaces the target does not change the
//     link (go-containerregistry#2002 gets this wrong);
//   - whiteouts are never themselves listed, in any layer, the bottom one
//     included (go-containerregistry#1623).
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
	// touched is 1 + the index of the last layer that wrote this path or
	// a path under it: that layer's whiteouts leave it in place.
	touched int
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
		if j%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		e := &ix.Entries[j]
		var err error
		switch kind, target := e.Whiteout(); kind {
		case WhiteoutFile:
			err = v.whiteout(i, target, false)
		case WhiteoutOpaque:
			err = v.whiteout(i, target, true)
		case NotWhiteout:
			err = v.add(i, e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// whiteout applies ".wh.NAME" (p is NAME's path) or, when opaque,
// ".wh..wh..opq" (p is its directory). The parent, or the opaque
// directory, is resolved inside the root; one that is missing or not a
// directory hides nothing, and one that cannot be resolved (a symlink
// loop) fails the layer, as it fails umoci.
func (v *View) whiteout(i int, p string, opaque bool) error {
	var parent, n *node
	var err error
	if opaque {
		n, err = v.walk(p+"/", true, nil)
	} else {
		dir, base := path.Split(p)
		if parent, err = v.walk(dir, true, nil); err == nil {
			n = parent.children[base]
		}
	}
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotDir) || (err == nil && n == nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("whiteout %.64q: %w", p, err)
	}
	if opaque {
		v.wipeChildren(i, n)
		return nil
	}
	v.wipe(i, parent, n)
	return nil
}

// wipe removes n from parent unless layer i touched it; then it wipes
// n's children instead.
func (v *View) wipe(i int, parent, n *node) {
	if n.touched != i+1 {
		v.remove(parent, n.name)
		return
	}
	v.wipeChildren(i, n)
}

func (v *View) wipeChildren(i int, n *node) {
	for _, c := range n.children {
		v.wipe(i, n, c)
	}
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
			touch(i, old)
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
	if _, err = v.insert(parent, n); err != nil {
		return err
	}
	touch(i, n)
	return nil
}

// touch marks n and its ancestors as written by layer i.
func touch(i int, n *node) {
	for ; n.parent != n && n.touched != i+1; n = n.parent {
		n.touched = i + 1
	}
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
