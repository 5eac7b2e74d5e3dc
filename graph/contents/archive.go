package contents

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"

	"github.com/wharfproject/wharf/internal/layerindex"
)

// Archive writes a tar of path p of img as dockerd's GET
// /containers/{id}/archive does: the top entry named by p's base name and
// everything under it below that name; a symlink given as p is archived
// as the link (docker cp's default). Files that share their bytes
// (hardlinks, in the view) are written once and linked after. start is
// called once with p's stat before the first byte and says where the tar
// goes.
func (r *Room) Archive(ctx context.Context, img *Image, p string, start func(container.PathStat) (io.Writer, error)) error {
	p = cleanPath(p)
	img = img.Wanting(WantPath(p))
	v, err := r.view(ctx, img)
	if err != nil {
		return err
	}
	st, err := statOf(v, p)
	if err != nil {
		return err
	}
	top, err := v.Lstat(p)
	if err != nil {
		return notFound(p, err)
	}
	// A small file alone is read, and verified, before the answer starts:
	// bytes that fail their digest are then an error answer that says why,
	// not a connection cut after the headers (cat's usual case).
	var pre []byte
	if (top.Type == layerindex.TypeFile || top.Type == layerindex.TypeHardlink) && top.Bytes().Entry.Size <= maxPrefetch {
		var buf bytes.Buffer
		if err := r.writeContent(ctx, img, v, top.Bytes(), &buf, nil); err != nil {
			return err
		}
		pre = buf.Bytes()
	}
	w, err := start(st)
	if err != nil {
		return err
	}
	a := &archiver{r: r, img: img, v: v, tw: tar.NewWriter(w), written: map[contentKey]string{}, pre: pre}
	if top.Type == layerindex.TypeDir {
		// A file alone is one read of exactly its span (cat's case).
		a.cur = newCursors(p)
		defer a.cur.Close()
	}
	// The root's base name is "/": its entries are "/", "/etc/", … as
	// dockerd names them (its rebase replaces the root by "" so that
	// they do not begin "//").
	base := path.Base(p)
	if err := a.add(ctx, top, base); err != nil {
		return err
	}
	if top.Type == layerindex.TypeDir {
		err := v.List(ctx, p, true, func(it layerindex.Item) error {
			rel := strings.TrimPrefix(strings.TrimPrefix(it.Path, p), "/")
			return a.add(ctx, it, path.Join(base, rel))
		})
		if err != nil {
			return err
		}
	}
	return a.tw.Close()
}

type contentKey struct {
	layer int
	path  string
}

type archiver struct {
	r       *Room
	img     *Image
	v       *layerindex.View // the view the items come from
	tw      *tar.Writer
	cur     *cursors
	written map[contentKey]string // the bytes already written → the tar name that holds them
	// pre is the top file's bytes, read before the answer started.
	pre []byte
}

// maxPrefetch caps the file Archive reads before it answers: 1 MiB, a
// request's share of memory that covers the configuration files and
// scripts cat is mostly asked for; a larger file streams, and a failure
// in it cuts the answer.
const maxPrefetch = 1 << 20

func (a *archiver) add(ctx context.Context, it layerindex.Item, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	hdr := &tar.Header{
		Name: name, Mode: tarMode(it.Mode), Uid: int(it.UID), Gid: int(it.GID),
		ModTime: it.ModTime, Devmajor: it.Devmajor, Devminor: it.Devminor,
	}
	switch it.Type {
	case layerindex.TypeDir:
		hdr.Typeflag, hdr.Name = tar.TypeDir, strings.TrimSuffix(name, "/")+"/"
	case layerindex.TypeSymlink:
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, it.Linkname
	case layerindex.TypeChar:
		hdr.Typeflag = tar.TypeChar
	case layerindex.TypeBlock:
		hdr.Typeflag = tar.TypeBlock
	case layerindex.TypeFIFO:
		hdr.Typeflag = tar.TypeFifo
	case layerindex.TypeFile, layerindex.TypeHardlink:
		loc := it.Bytes()
		key := contentKey{loc.LayerIndex, loc.Entry.Path}
		if first, ok := a.written[key]; ok {
			hdr.Typeflag, hdr.Linkname = tar.TypeLink, first
			return a.tw.WriteHeader(hdr)
		}
		a.written[key] = name
		hdr.Typeflag, hdr.Size = tar.TypeReg, loc.Entry.Size
		if err := a.tw.WriteHeader(hdr); err != nil {
			return err
		}
		if a.pre != nil {
			pre := a.pre
			a.pre = nil
			_, err := a.tw.Write(pre)
			return err
		}
		// A sparse file is written whole: its holes as zeros.
		return a.r.writeContent(ctx, a.img, a.v, loc, a.tw, a.cur)
	default:
		return fmt.Errorf("%s: entry of type %s%.0w", it.Path, it.Type, errdefs.ErrInternal)
	}
	return a.tw.WriteHeader(hdr)
}

// tarMode is the tar header's mode of m: permissions and the setuid,
// setgid and sticky bits in their C places.
func tarMode(m fs.FileMode) int64 {
	out := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		out |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		out |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		out |= 0o1000
	}
	return out
}

// Cat writes the bytes of the file p of img resolves to (a symlink
// followed inside the root), verified when its digest is known.
func (r *Room) Cat(ctx context.Context, img *Image, p string, w io.Writer) error {
	p = cleanPath(p)
	img = img.Wanting(WantPath(p))
	v, err := r.view(ctx, img)
	if err != nil {
		return err
	}
	it, err := v.Stat(p)
	if err != nil {
		return notFound(p, err)
	}
	if it.Type != layerindex.TypeFile && it.Type != layerindex.TypeHardlink {
		return fmt.Errorf("%s is a %s, not a file%.0w", p, it.Type, errdefs.ErrInvalidArgument)
	}
	return r.writeContent(ctx, img, v, it.Bytes(), w, nil)
}
