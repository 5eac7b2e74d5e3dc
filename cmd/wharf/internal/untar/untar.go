// Package untar extracts a tar from the daemon (wharf cp) into a directory
// and never writes outside it.
//
// Every file operation goes through an os.Root opened on the destination:
// the kernel resolves each name beneath it (openat2 RESOLVE_BENEATH, or a
// component-by-component walk), so neither a symlink in the archive nor
// one already in the destination leads out of it. On top of that an entry
// whose name is absolute (but the "/…" names of an archive of the root) or
// climbs with ".." is refused before anything is
// touched, a hardlink may only name a regular file this extraction already
// wrote, and a file is created with O_EXCL after whatever stood at its
// name is removed (the name itself, never what a symlink there points at).
// Modes are kept, setuid, setgid and sticky included, and owners are not
// (docker cp's NoLchown); device nodes and fifos are skipped, as an
// unprivileged docker cp cannot make them either.
package untar

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"
)

const (
	// maxName caps an entry's name and a link's target (4,096 bytes):
	// Linux's PATH_MAX; a longer name cannot be created anyway.
	maxName = 4096
	// maxEntries caps the entries of one archive (10^7): ten times the
	// largest image filesystems seen (~10^6 entries); the names of the
	// files written are kept for the hardlink check, ~1 GiB at this cap.
	maxEntries = 10_000_000
)

// ErrHostile is the class of a refused archive: a name out of the
// destination, a hardlink to something this extraction did not write.
var ErrHostile = errors.New("refusing a hostile archive")

// Options say how the archive's names map into the destination.
type Options struct {
	// Top, when set, is the archive's top name (the base name of the
	// copied path) and NewTop what it becomes: docker cp's copy to a new
	// name. NewTop "" strips it: the top directory's entries go straight
	// into the destination. An entry under another top name is refused.
	// Top "/" is the archive of the root, whose names begin with "/".
	Top, NewTop string
	// Single allows the one entry named Top and nothing under it: the copy
	// of a file (or a symlink) to a new name, where dest is the new name's
	// directory and an entry under Top could reach a sibling of it.
	Single bool
}

// Result counts what an extraction did not write.
type Result struct {
	// Skipped are device nodes and fifos (not made without privileges).
	Skipped int
}

type dirMeta struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
}

// Extract reads the tar r and writes it under dest, which must exist.
func Extract(ctx context.Context, r io.Reader, dest string, opts Options) (Result, error) {
	var res Result
	root, err := os.OpenRoot(dest)
	if err != nil {
		return res, err
	}
	defer root.Close()
	x := &extractor{root: root, written: map[string]bool{}}
	tr := tar.NewReader(r)
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, fmt.Errorf("reading the archive: %w", err)
		}
		if n >= maxEntries {
			return res, fmt.Errorf("%w: more than %d entries", ErrHostile, maxEntries)
		}
		name, ok, err := mapName(hdr.Name, opts)
		if err != nil {
			return res, err
		}
		if !ok {
			continue
		}
		skipped, err := x.entry(hdr, name, tr, opts)
		if err != nil {
			return res, fmt.Errorf("extracting %q: %w", hdr.Name, err)
		}
		if skipped {
			res.Skipped++
		}
	}
	// Directories last, deepest first: a read-only directory is made so
	// only once its entries are in, and its mtime is not moved by them.
	for i := len(x.dirs) - 1; i >= 0; i-- {
		d := x.dirs[i]
		if err := x.setMeta(d.name, d.mode, d.mtime); err != nil {
			return res, fmt.Errorf("extracting %q: %w", d.name, err)
		}
	}
	return res, nil
}

// mapName checks an entry's name and maps it into the destination: a
// relative, clean name; ok false for an entry that maps to the
// destination itself.
func mapName(name string, opts Options) (string, bool, error) {
	if len(name) > maxName {
		return "", false, fmt.Errorf("%w: a name of %d bytes (over %d)", ErrHostile, len(name), maxName)
	}
	if opts.Top == "/" {
		// The archive of the root names its entries "/", "/etc/", … (the
		// root's base name is "/", as dockerd's rebase writes them): the
		// one absolute name accepted, mapped like any other top name.
		rel, ok := strings.CutPrefix(name, "/")
		if !ok {
			return "", false, fmt.Errorf("%w: %q is not under the copied root", ErrHostile, name)
		}
		if rel == "" || rel == "." {
			return "", false, nil
		}
		if err := checkName(rel); err != nil {
			return "", false, err
		}
		name = path.Join(opts.NewTop, path.Clean(rel))
		if name == "." || name == "" {
			return "", false, nil
		}
		return name, true, nil
	}
	if err := checkName(name); err != nil {
		return "", false, err
	}
	name = path.Clean(name)
	if opts.Top != "" {
		top, rest, _ := strings.Cut(name, "/")
		if top != opts.Top || (opts.Single && rest != "") {
			return "", false, fmt.Errorf("%w: %q is not the copied path %q", ErrHostile, name, opts.Top)
		}
		name = path.Join(opts.NewTop, rest)
	}
	if name == "." || name == "" {
		return "", false, nil
	}
	return name, true, nil
}

// checkName refuses an absolute name, one with a ".." component or a NUL.
func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: an empty name", ErrHostile)
	}
	if strings.HasPrefix(name, "/") || strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("%w: %q is not a relative name", ErrHostile, name)
	}
	for _, c := range strings.Split(name, "/") {
		if c == ".." {
			return fmt.Errorf("%w: %q climbs out with \"..\"", ErrHostile, name)
		}
	}
	return nil
}

type extractor struct {
	root    *os.Root
	written map[string]bool // regular files this extraction wrote: the only hardlink targets
	dirs    []dirMeta
}

func (x *extractor) entry(hdr *tar.Header, name string, r io.Reader, opts Options) (skipped bool, err error) {
	mode := hdr.FileInfo().Mode()
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := x.mkdir(name); err != nil {
			return false, err
		}
		x.dirs = append(x.dirs, dirMeta{name, mode.Perm() | mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), hdr.ModTime})
		return false, nil
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old archives still write TypeRegA
		if err := x.clear(name); err != nil {
			return false, err
		}
		return false, x.writeFile(name, mode, hdr.ModTime, r)
	case tar.TypeSymlink:
		if len(hdr.Linkname) > maxName || strings.IndexByte(hdr.Linkname, 0) >= 0 {
			return false, fmt.Errorf("%w: a symlink target of %d bytes", ErrHostile, len(hdr.Linkname))
		}
		if err := x.clear(name); err != nil {
			return false, err
		}
		// The target is written as is: it is never followed here, and
		// later entries under it resolve through the root, inside dest.
		if err := x.root.Symlink(hdr.Linkname, name); err != nil {
			return false, err
		}
		return false, x.lchtimes(name, hdr.ModTime)
	case tar.TypeLink:
		target, ok, err := mapName(hdr.Linkname, opts)
		if err != nil {
			return false, err
		}
		if !ok || !x.written[target] {
			return false, fmt.Errorf("%w: a hardlink to %q, not a file of this archive", ErrHostile, hdr.Linkname)
		}
		if err := x.clear(name); err != nil {
			return false, err
		}
		if err := x.root.Link(target, name); err != nil {
			return false, err
		}
		x.written[name] = true
		return false, nil
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return true, nil
	case tar.TypeXGlobalHeader:
		return false, nil
	default:
		return false, fmt.Errorf("%w: entry type %q", ErrHostile, hdr.Typeflag)
	}
}

// mkdir makes name a directory: an existing directory is kept, anything
// else at the name (a file, a symlink) is replaced.
func (x *extractor) mkdir(name string) error {
	if err := x.parents(name); err != nil {
		return err
	}
	if fi, err := x.root.Lstat(name); err == nil {
		if fi.IsDir() {
			return nil
		}
		if err := x.root.Remove(name); err != nil {
			return err
		}
	}
	return x.root.Mkdir(name, 0o700)
}

// parents makes the missing directories above name (an archive need not
// list them), resolved through the root.
func (x *extractor) parents(name string) error {
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	return x.root.MkdirAll(dir, 0o755)
}

// clear removes what stands at name, unless it is a directory (an archive
// does not replace a directory by a file: docker's NoOverwriteDirNonDir).
func (x *extractor) clear(name string) error {
	if err := x.parents(name); err != nil {
		return err
	}
	fi, err := x.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("cannot overwrite directory %q with a non-directory", name)
	}
	delete(x.written, name)
	return x.root.Remove(name)
}

func (x *extractor) writeFile(name string, mode fs.FileMode, mtime time.Time, r io.Reader) error {
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	// On the open file: no name is resolved again between write and chmod.
	if err := f.Chmod(mode.Perm() | mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	x.written[name] = true
	return x.root.Chtimes(name, mtime, mtime)
}

// setMeta sets a directory's mode and mtime, unless the name is no longer
// a directory (a later entry replaced it).
func (x *extractor) setMeta(name string, mode fs.FileMode, mtime time.Time) error {
	fi, err := x.root.Lstat(name)
	if err != nil || !fi.IsDir() {
		return err
	}
	if err := x.root.Chmod(name, mode); err != nil {
		return err
	}
	return x.root.Chtimes(name, mtime, mtime)
}
