package untar

import (
	"os"
	"path"
	"time"

	"golang.org/x/sys/unix"
)

// lchtimes sets the mtime (and atime) of the symlink name itself, as
// docker cp does (LUtimesNano): os.Root has no call that leaves a link
// unfollowed, so the link's directory is opened through the root, inside
// dest, and the time set relative to it without following the name.
func (x *extractor) lchtimes(name string, mtime time.Time) error {
	dir, err := x.root.OpenFile(path.Dir(name), os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer dir.Close()
	ts := unix.NsecToTimespec(mtime.UnixNano())
	return unix.UtimesNanoAt(int(dir.Fd()), path.Base(name), []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
}
