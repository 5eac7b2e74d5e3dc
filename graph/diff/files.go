package diff

import (
	"context"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/layerindex"
)

// maxFileChanges caps the changes one answer lists: 100,000, about 30 MB
// of JSON at some 300 bytes a change. Two unrelated images of a million
// files each say Truncated rather than hold them all.
const maxFileChanges = 100_000

// The values of FileChange.Change and .What.
const (
	changeAdded   = "added"
	changeRemoved = "removed"
	changeChanged = "changed"
)

// Files is the files section. shared are the indexes of the layers both
// images share at the bottom when every one is at hand (nil when not; an
// empty slice when there are none); from and to are each side's indexes of
// its layers above them, bottom first. Modification times are not
// compared: a rebuilt layer changes every one of them. The views are
// merged under layerindex's default limits.
func Files(ctx context.Context, shared, from, to []*layerindex.Index) (*types.FilesDiff, error) {
	var lim layerindex.Limits // the views' defaults, as the contents room's
	d := &types.FilesDiff{LayersIndexed: distinct(from, to)}
	var err error
	if shared != nil {
		d.SharedCompared = true
		err = filesOverShared(ctx, d, shared, from, to, lim)
	} else {
		err = filesOfUppers(ctx, d, from, to, lim)
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// distinct counts the layers indexed: a layer both upper stacks hold
// (moved up or down) is indexed once.
func distinct(a, b []*layerindex.Index) int {
	seen := map[digest.Digest]bool{}
	for _, ix := range append(slices.Clip(a), b...) {
		seen[ix.Layer] = true
	}
	return len(seen)
}

// filesOverShared compares the two whole views, the shared layers under
// each side's own: exact for whiteouts and opaque directories. A path both
// views take from the same entry of a shared layer is equal without a
// look.
func filesOverShared(ctx context.Context, d *types.FilesDiff, shared, from, to []*layerindex.Index, lim layerindex.Limits) error {
	k := len(shared)
	a, err := viewItems(ctx, append(slices.Clip(shared), from...), lim, false)
	if err != nil {
		return err
	}
	b, err := viewItems(ctx, append(slices.Clip(shared), to...), lim, false)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if err := every(ctx, i+j); err != nil {
			return err
		}
		var c int
		switch {
		case i == len(a):
			c = 1
		case j == len(b):
			c = -1
		default:
			c = layerindex.ComparePaths(a[i].Path, b[j].Path)
		}
		switch {
		case c < 0:
			add(d, types.FileChange{Path: a[i].Path, Change: changeRemoved, From: entryOf(&a[i])})
			i++
		case c > 0:
			add(d, types.FileChange{Path: b[j].Path, Change: changeAdded, To: entryOf(&b[j])})
			j++
		default:
			x, y := &a[i], &b[j]
			sameEntry := x.LayerIndex == y.LayerIndex && x.LayerIndex < k && x.Content == nil && y.Content == nil
			if !sameEntry {
				if w := what(x, y); len(w) > 0 {
					add(d, types.FileChange{Path: x.Path, Change: changeChanged, From: entryOf(x), To: entryOf(y), What: w})
				}
			}
			i++
			j++
		}
	}
	return nil
}

// sideState is what one side's upper layers do to a path.
type sideState struct {
	item    *layerindex.Item // the entry they leave there
	removed bool             // they remove it (a whiteout)
}

// filesOfUppers compares what each side's upper layers name, the shared
// layers unread (Files' doc says what that leaves out).
func filesOfUppers(ctx context.Context, d *types.FilesDiff, from, to []*layerindex.Index, lim layerindex.Limits) error {
	states := map[string]*[2]sideState{}
	at := func(p string) *[2]sideState {
		s := states[p]
		if s == nil {
			s = &[2]sideState{}
			states[p] = s
		}
		return s
	}
	for side, layers := range [][]*layerindex.Index{from, to} {
		items, err := viewItems(ctx, layers, lim, true)
		if err != nil {
			return err
		}
		for n := range items {
			at(items[n].Path)[side].item = &items[n]
		}
		for _, ix := range layers {
			for e := range ix.Entries {
				if kind, p := ix.Entries[e].Whiteout(); kind == layerindex.WhiteoutFile {
					if s := at(p); s[side].item == nil {
						s[side].removed = true
					}
				}
			}
		}
	}
	paths := make([]string, 0, len(states))
	for p := range states {
		paths = append(paths, p)
	}
	slices.SortFunc(paths, layerindex.ComparePaths)
	for n, p := range paths {
		if err := every(ctx, n); err != nil {
			return err
		}
		a, b := states[p][0], states[p][1]
		switch {
		case a.item != nil && b.item != nil:
			if w := what(a.item, b.item); len(w) > 0 {
				add(d, types.FileChange{Path: p, Change: changeChanged, From: entryOf(a.item), To: entryOf(b.item), What: w})
			}
		case a.item != nil && b.removed:
			add(d, types.FileChange{Path: p, Change: changeRemoved, From: entryOf(a.item)})
		case a.removed && b.item != nil:
			add(d, types.FileChange{Path: p, Change: changeAdded, To: entryOf(b.item)})
		case a.removed && b.removed:
		case a.item != nil:
			// To keeps whatever the shared layers hold. A directory an
			// upper layer names to hold a changed child is no change.
			if a.item.Type != layerindex.TypeDir {
				add(d, types.FileChange{Path: p, Change: changeRemoved, From: entryOf(a.item), Unindexed: "to"})
			}
		case b.item != nil:
			if b.item.Type != layerindex.TypeDir {
				add(d, types.FileChange{Path: p, Change: changeAdded, To: entryOf(b.item), Unindexed: "from"})
			}
		case a.removed:
			// From removed what the shared layers hold; To keeps it.
			add(d, types.FileChange{Path: p, Change: changeAdded, Unindexed: "to"})
		case b.removed:
			add(d, types.FileChange{Path: p, Change: changeRemoved, Unindexed: "from"})
		}
	}
	return nil
}

// every checks ctx once per 4,096 steps of a walk.
func every(ctx context.Context, n int) error {
	if n%4096 == 0 {
		return ctx.Err()
	}
	return nil
}

func add(d *types.FilesDiff, c types.FileChange) {
	if len(d.Changes) >= maxFileChanges {
		d.Truncated = true
		return
	}
	d.Changes = append(d.Changes, c)
}

// viewItems are the paths of the view of layers, in List's order;
// named drops the directories no layer named.
func viewItems(ctx context.Context, layers []*layerindex.Index, lim layerindex.Limits, named bool) ([]layerindex.Item, error) {
	v, err := layerindex.Merge(ctx, layers, lim)
	if err != nil {
		return nil, err
	}
	var out []layerindex.Item
	err = v.List(ctx, "/", true, func(it layerindex.Item) error {
		if !named || !it.Implicit {
			out = append(out, it)
		}
		return nil
	})
	return out, err
}

// what lists what differs between two entries of one path: "type" alone
// when the kinds differ, else "size", "mode", "owner", "link" (a
// symlink's target) and "content" (a file's digest, when both are known).
// A hardlink is what its target is.
func what(x, y *layerindex.Item) []string {
	a, b := x.Bytes().Entry, y.Bytes().Entry
	if a.Type != b.Type || (a.Type == layerindex.TypeChar || a.Type == layerindex.TypeBlock) && (a.Devmajor != b.Devmajor || a.Devminor != b.Devminor) {
		return []string{"type"}
	}
	var w []string
	if (a.Type == layerindex.TypeFile || a.Type == layerindex.TypeSymlink) && a.Size != b.Size {
		w = append(w, "size")
	}
	if a.Mode != b.Mode {
		w = append(w, "mode")
	}
	if a.UID != b.UID || a.GID != b.GID {
		w = append(w, "owner")
	}
	if a.Type == layerindex.TypeSymlink && a.Linkname != b.Linkname {
		w = append(w, "link")
	}
	if a.Type == layerindex.TypeFile && a.HasDigest && b.HasDigest && a.SHA256 != b.SHA256 {
		w = append(w, "content")
	}
	return w
}

// entryOf is the files API's entry of a view's item; a hardlink shows its
// target's size and digest, as ls does.
func entryOf(it *layerindex.Item) *types.FileEntry {
	e := &types.FileEntry{
		Path: it.Path, Type: it.Type.String(), Mode: uint32(it.Mode),
		Uid: it.UID, Gid: it.GID, Size: it.Size,
		Linkname: it.Linkname, Layer: it.Layer.String(), Digest: it.Digest().String(),
	}
	if !it.ModTime.IsZero() {
		e.ModTime = it.ModTime.UTC().Format(time.RFC3339Nano)
	}
	if it.Content != nil {
		e.Size, e.Digest = it.Content.Entry.Size, it.Content.Entry.Digest().String()
	}
	return e
}
