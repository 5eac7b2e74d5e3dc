package contents

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/layerindex"
)

// layerBuilds is how many layers of one image are indexed at once: 3,
// dockerd's max-concurrent-downloads default, so that a cold listing
// overlaps the layers' downloads and decompression as a pull does, while
// one request holds at most three builds' memory.
const layerBuilds = 3

// allLayers are the indexes of img's layers, bottom first, up to
// layerBuilds of them built at once; the first failure stops the rest.
func (r *Room) allLayers(ctx context.Context, img *Image) ([]*layerData, error) {
	return r.layersFrom(ctx, img, 0)
}

// view is the merged view of img, kept by its manifest digest (a manifest
// names its layers, so one view serves every image and tag that has it).
func (r *Room) view(ctx context.Context, img *Image) (*layerindex.View, error) {
	key := img.Manifest.Digest.String()
	if key == "" {
		return nil, fmt.Errorf("image without a manifest digest%.0w", errdefs.ErrInvalidArgument)
	}
	if v, ok := r.views.get(key); ok {
		return v, nil
	}
	return r.viewBuilds.do(ctx, key, func(ctx context.Context) (*layerindex.View, error) {
		lds, err := r.allLayers(ctx, img)
		if err != nil {
			return nil, err
		}
		ixs := make([]*layerindex.Index, len(lds))
		var cost int64
		for i, ld := range lds {
			ixs[i] = ld.ix
			cost += ld.cost()
		}
		v, err := layerindex.Merge(ctx, ixs, r.lim)
		if err != nil {
			return nil, err
		}
		r.views.add(key, v, cost)
		return v, nil
	})
}

func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	return path.Join("/", p)
}

// Files lists img's paths under opts.Path: the merged view, or with
// opts.Layers each layer's own entries (whiteouts included), bottom first.
func (r *Room) Files(ctx context.Context, img *Image, opts types.FilesOptions, emit func(types.FileEntry) error) error {
	p := cleanPath(opts.Path)
	if opts.Layers {
		lds, err := r.allLayers(ctx, img)
		if err != nil {
			return err
		}
		found := false
		for _, ld := range lds {
			for _, e := range layerindex.ListLayer(ld.ix, p, opts.Recursive) {
				found = true
				if err := emit(fileEntry(e, ld.ix.Layer.String(), ld.ix.Source)); err != nil {
					return err
				}
			}
		}
		if !found && p != "/" {
			return notFound(p, layerindex.ErrNotFound)
		}
		return nil
	}
	v, err := r.view(ctx, img)
	if err != nil {
		return err
	}
	layers := v.Layers()
	err = v.List(ctx, p, opts.Recursive, func(it layerindex.Item) error {
		var src layerindex.Source
		if it.LayerIndex >= 0 && it.LayerIndex < len(layers) {
			src = layers[it.LayerIndex].Source
		}
		fe := fileEntry(listedEntry(v, it), it.Layer.String(), src)
		if it.Content != nil {
			// A hardlink of the view is the file it shares bytes with,
			// as ls -l in a container shows it.
			fe.Size, fe.Digest = it.Content.Entry.Size, it.Content.Entry.Digest().String()
		}
		return emit(fe)
	})
	return notFound(p, err)
}

// listedEntry is what the merged listing says of an item. A hardlink is
// listed as one only while its target path still holds the bytes it
// shares: a target removed or replaced by a later layer leaves the link
// the one name of the old inode, a regular file as a container sees it
// (dockerd's applier unlinks the old target; the link keeps the inode),
// and a Linkname naming another file or none would mislead.
func listedEntry(v *layerindex.View, it layerindex.Item) layerindex.Entry {
	if it.Content == nil {
		return it.Entry
	}
	if t, err := v.Lstat(it.Linkname); err == nil {
		if b := t.Bytes(); b.LayerIndex == it.Content.LayerIndex && b.Entry.Path == it.Content.Entry.Path {
			return it.Entry
		}
	}
	e := it.Content.Entry
	e.Path = it.Path
	return e
}

// notFound names the path in the view's lookup errors (which carry their
// errdefs class).
func notFound(p string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, layerindex.ErrNotFound) || errors.Is(err, layerindex.ErrNotDir) || errors.Is(err, layerindex.ErrSymlinkLoop) {
		return fmt.Errorf("%s: %w", p, err)
	}
	return err
}

func fileEntry(e layerindex.Entry, layer string, src layerindex.Source) types.FileEntry {
	fe := types.FileEntry{
		Path: e.Path, Type: e.Type.String(), Mode: uint32(e.Mode),
		Uid: e.UID, Gid: e.GID, Size: e.Size,
		ModTime:  e.ModTime.UTC().Format(time.RFC3339Nano),
		Linkname: e.Linkname, Layer: layer,
		Digest: e.Digest().String(),
	}
	if src.Valid() {
		fe.Source = src.String()
	}
	return fe
}

// Stat is the stat of path p of img as dockerd's HEAD
// /containers/{id}/archive gives it: the path itself (a symlink not
// followed), Name its base name, LinkTarget the absolute path a symlink
// resolves to inside the root.
func (r *Room) Stat(ctx context.Context, img *Image, p string) (container.PathStat, error) {
	v, err := r.view(ctx, img)
	if err != nil {
		return container.PathStat{}, err
	}
	return statOf(v, cleanPath(p))
}

func statOf(v *layerindex.View, p string) (container.PathStat, error) {
	it, err := v.Lstat(p)
	if err != nil {
		return container.PathStat{}, notFound(p, err)
	}
	st := container.PathStat{Name: path.Base(p), Size: it.Size, Mode: it.Mode, Mtime: it.ModTime}
	if it.Type == layerindex.TypeSymlink {
		// A target that does not exist still has a place: the path
		// docker's FollowSymlinkInScope gives. The view resolves only
		// existing paths, so a dangling link has no LinkTarget here.
		// A loop has no place at all: dockerd's stat fails on it
		// (FollowSymlinkInScope), and so does this one.
		t, err := v.Resolve(p, true)
		switch {
		case err == nil:
			st.LinkTarget = t
		case errors.Is(err, layerindex.ErrSymlinkLoop):
			return container.PathStat{}, notFound(p, err)
		}
	}
	return st, nil
}
