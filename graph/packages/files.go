package packages

import (
	"bytes"
	"context"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/contents"
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
		p := e.Path
		switch kindOf(p, fs.FileMode(e.Mode), e.Size) {
		case kindDpkg:
			f.dpkg = append(f.dpkg, p)
		case kindStatusD:
			f.statusD = append(f.statusD, p)
		case kindApk:
			f.apk = append(f.apk, p)
		case kindRPM:
			f.rpm = append(f.rpm, p)
		case kindExec:
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

// kind is what a cataloger makes of a file.
type kind int

const (
	kindNone kind = iota
	kindDpkg
	kindStatusD
	kindApk
	kindRPM
	kindExec // a binary that may carry Go build info
)

func kindOf(p string, mode fs.FileMode, size int64) kind {
	dir := path.Dir(p)
	switch {
	case strings.HasSuffix(p, "/lib/dpkg/status"):
		return kindDpkg
	case strings.HasSuffix(dir, "/lib/dpkg/status.d"):
		return kindStatusD
	case strings.HasSuffix(p, "/lib/apk/db/installed"):
		return kindApk
	case rpmDBNames[path.Base(p)] && rpmDir(dir):
		return kindRPM
	case mode&0o111 != 0 && size >= 4:
		return kindExec
	}
	return kindNone
}

// Wanted are the files a package list reads after the walk: a layer
// indexed for it keeps their bytes in the same pass (contents.Want), Go
// binaries only (an ELF file with the build info's magic), so that a list
// costs no range request after the layers' reads.
var Wanted = &contents.Want{
	File: func(p string, mode fs.FileMode, size int64) bool {
		return kindOf(p, mode, size) != kindNone || slices.Contains(osReleasePaths, p)
	},
	Keep: func(p string, mode fs.FileMode, data []byte) bool {
		if kindOf(p, mode, int64(len(data))) != kindExec {
			return true
		}
		return bytes.HasPrefix(data, elfMagic) && bytes.Contains(data, goBuildInfoMagic)
	},
}

// goBuildInfoMagic starts the .go.buildinfo section of every Go binary
// since Go 1.13, which debug/buildinfo reads.
var goBuildInfoMagic = []byte("\xff Go buildinf:")

func rpmDir(dir string) bool {
	for _, d := range rpmDirs {
		if strings.HasSuffix(dir, d) {
			return true
		}
	}
	return false
}
