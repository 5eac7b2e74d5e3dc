package layerindex

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
)

// walk resolves p inside the view's root, as docker cp resolves a path in
// a container (moby/sys/symlink's FollowSymlinkInScope, with the
// kernel's hop count):
//   - p is taken from the root whether or not it starts with "/";
//   - a symlink's absolute target starts again at the image's root, a
//     relative one at the symlink's directory;
//   - ".." at the root stays at the root, so nothing resolves outside it;
//   - every symlink on the way is followed; the last component is
//     followed when followFinal is set or p ends in "/";
//   - more than MaxSymlinkHops symlinks is ErrSymlinkLoop.
//
// A missing component is ErrNotFound, unless mk is given: then mk makes
// it (Merge's implicit parent directories).
func (v *View) walk(p string, followFinal bool, mk func(parent *node, name string) (*node, error)) (*node, error) {
	cur := v.root
	rest := p
	hops := 0
	lastSlash := false
	for {
		if v.merging {
			v.steps++
			if v.steps > v.lim.MaxMergeSteps {
				return nil, limitErr("merging takes over %d path steps", v.lim.MaxMergeSteps)
			}
		}
		rest = strings.TrimLeft(rest, "/")
		if rest == "" {
			// "file/" is not a directory, as the kernel says.
			if lastSlash && !cur.isDir() {
				return nil, fmt.Errorf("%w: %.64q%.0w", ErrNotDir, p, errdefs.ErrInvalidArgument)
			}
			return cur, nil
		}
		comp, after, slash := strings.Cut(rest, "/")
		rest, lastSlash = after, slash
		if !cur.isDir() {
			return nil, fmt.Errorf("%w: %.64q%.0w", ErrNotDir, p, errdefs.ErrInvalidArgument)
		}
		switch comp {
		case ".":
			continue
		case "..":
			cur = cur.parent
			continue
		}
		child := cur.children[comp]
		if child == nil {
			if mk == nil {
				return nil, fmt.Errorf("%w: %.64q%.0w", ErrNotFound, p, errdefs.ErrNotFound)
			}
			var err error
			if child, err = mk(cur, comp); err != nil {
				return nil, err
			}
		}
		if !child.isSymlink() || (!slash && !followFinal) {
			cur = child
			continue
		}
		hops++
		if hops > MaxSymlinkHops {
			return nil, fmt.Errorf("%w: %.64q (over %d links)%.0w", ErrSymlinkLoop, p, MaxSymlinkHops, errdefs.ErrInvalidArgument)
		}
		target := child.effective().Linkname
		if target == "" {
			// An empty target resolves to nothing (ENOENT), not to the
			// symlink's directory.
			return nil, fmt.Errorf("%w: %.64q (empty symlink)%.0w", ErrNotFound, p, errdefs.ErrNotFound)
		}
		if strings.HasPrefix(target, "/") {
			cur = v.root
		}
		if slash {
			target += "/"
		}
		// Each hop adds at most one link target, so rest stays under
		// MaxSymlinkHops × MaxPathLen plus p.
		rest = target + rest
	}
}

// pathOf is n's path in the view.
func pathOf(n *node) string {
	if n.parent == n {
		return "/"
	}
	var names []string
	for ; n.parent != n; n = n.parent {
		names = append(names, n.name)
	}
	var b strings.Builder
	for i := len(names) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(names[i])
	}
	return b.String()
}
