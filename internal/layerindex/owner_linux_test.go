package layerindex

import (
	"io/fs"
	"syscall"
)

func owner(fi fs.FileInfo) (int64, int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, -1
	}
	return int64(st.Uid), int64(st.Gid)
}
