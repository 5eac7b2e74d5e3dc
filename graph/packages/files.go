package packages

import (
	"context"
	"io/fs"
	"path"
	"strings"

	"github.com/wharfproject/wharf/api/types"
)

// files are the paths one walk of the view finds for the catalogers,
// matched as syft's globs match them ("**/lib/dpkg/status" at any depth).
type files struct {
	dpkg, statusD, apk, rpm []string
	exec                    []types.FileEntry
	layer                   map[string]string // path → layer that set it
}

// rpmDBNames are the rpm databases' base names (sqlite, ndb, bdb).
var rpmDBNames = map[string]bool{"rpmdb.sqlite": true, "Packages.db": true, "Packages": true}

// rpmDirs are the directories rpm keeps its database in.
var rpmDirs = []string{"/var/lib/rpm", "/usr/share/rpm", "/usr/lib/sysimage/rpm"}

func walk(ctx context.Context, fsys FS, lim Limits) (*files, error) {
	f := &files{layer: map[string]string{}}
	err := fsys.Walk(ctx, func(e types.FileEntry) error {
		if e.Type != types.FileTypeFile && e.Type != types.FileTypeHardlink {
			return nil
		}
		p, dir := e.Path, path.Dir(e.Path)
		switch {
		case strings.HasSuffix(p, "/lib/dpkg/status"):
			f.dpkg = append(f.dpkg, p)
		case strings.HasSuffix(dir, "/lib/dpkg/status.d"):
			f.statusD = append(f.statusD, p)
		case strings.HasSuffix(p, "/lib/apk/db/installed"):
			f.apk = append(f.apk, p)
		case rpmDBNames[path.Base(p)] && rpmDir(dir):
			f.rpm = append(f.rpm, p)
		case fs.FileMode(e.Mode)&0o111 != 0 && e.Size >= 4:
			if len(f.exec) >= lim.MaxBinaries {
				return nil // catalogGo examines no more
			}
			f.exec = append(f.exec, e)
		default:
			return nil
		}
		// Only the paths a cataloger reads: an image of 10^6 files keeps
		// no map of them all.
		f.layer[p] = e.Layer
		return nil
	})
	return f, err
}

func rpmDir(dir string) bool {
	for _, d := range rpmDirs {
		if strings.HasSuffix(dir, d) {
			return true
		}
	}
	return false
}
