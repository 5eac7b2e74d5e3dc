//go:build linux

package content

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing [off, off+n) of f to disk
// now, without waiting for it (sync_file_range SYNC_FILE_RANGE_WRITE). A
// blob's pages then go to disk while the rest of it is still arriving, and
// the fdatasync at commit finds little left to do. It is only a hint: the
// durability comes from syncData; an error here changes nothing.
func startWriteback(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}

// syncData makes f's data (and the metadata needed to read it back: its
// size) durable: fdatasync, which skips the timestamps fsync would also
// journal.
func syncData(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if !errors.Is(serr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}

// DiskFull reports ENOSPC when the file system of dir has no block left
// for an unprivileged writer (statfs f_bavail). A records change checks it
// before it commits (commit.go); a failing statfs reports nothing.
func DiskFull(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil
	}
	if st.Bavail == 0 {
		return unix.ENOSPC
	}
	return nil
}
