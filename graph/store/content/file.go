package content

import (
	"bufio"
	"io"
	"os"
	"path/filepath"

	"github.com/wharfproject/wharf/internal/atomicfile"
)

// WriteFile writes dir/name (a file of the layout: oci-layout, index.json,
// the records' stub) through a temp file in dir: write, fsync, rename,
// fsync of dir. A full disk or an I/O error shows before anything visible
// changed; a crash leaves the old file or the new one.
func WriteFile(dir, name string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, FileMode)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return atomicfile.SyncDir(dir)
}
