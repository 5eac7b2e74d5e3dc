// Package atomicfile writes a small file so that a crash leaves either the
// old content or the new one, never a part, and makes the change durable:
// the one implementation for the daemon's own files under the data-root
// (the watch's state, the engine ID) and the directory sync the image
// store uses after its renames.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically: a temp file beside it (perm),
// fsync, rename over path, fsync of the directory. The temp name is fixed
// (path + ".tmp": callers are the one writer of path, under the
// data-root's lock) and removed first, so a temp file left by a crash,
// or a symlink planted there, is never written through (O_EXCL).
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir makes the renames and creations in dir durable (fsync of the
// directory). A file system that cannot sync a directory (EINVAL) is not
// an error: there is nothing more to do there.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
