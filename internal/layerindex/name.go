package layerindex

import (
	"fmt"
	"path"
	"strings"

	"github.com/containerd/errdefs"
)

// The OCI (and AUFS) whiteout names. A ".wh..wh." name other than the
// opaque marker is AUFS bookkeeping (.wh..wh.plnk, .wh..wh.aufs) that
// dockerd's applier skips; so does the view.
const (
	whiteoutPrefix = ".wh."
	whiteoutMeta   = ".wh..wh."
	opaqueMarker   = ".wh..wh..opq"
)

// cleanName turns a tar entry name into the index's path: absolute and
// cleaned, "./a//b/" → "/a/b", "." and "./" → "/". A name that climbs above
// the root ("../x", "a/../../x", "/../x") is refused rather than clamped to
// the root: dockerd's applier refuses the layer ("breakout"), and a layer
// that tries is hostile, not damaged. A NUL byte is refused too; no file
// name holds one.
func cleanName(name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("%w: entry name %.64q holds a NUL byte%.0w", ErrInvalidTar, name, errdefs.ErrInvalidArgument)
	}
	rel := path.Clean(strings.TrimLeft(name, "/"))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%w: %.64q%.0w", ErrTraversal, name, errdefs.ErrInvalidArgument)
	}
	if rel == "." {
		return "/", nil
	}
	return "/" + rel, nil
}

// isClean reports whether p is a path cleanName returns: Decode refuses any
// other, so an index on disk cannot bring back what Build refused.
func isClean(p string) bool {
	c, err := cleanName(p)
	return err == nil && c == p
}

// WhiteoutKind says what a whiteout entry does.
type WhiteoutKind uint8

// The kinds of whiteout.
const (
	NotWhiteout    WhiteoutKind = iota
	WhiteoutFile                // .wh.NAME hides NAME of the lower layers
	WhiteoutOpaque              // .wh..wh..opq hides its directory's lower contents
	WhiteoutMeta                // other .wh..wh.* names: AUFS bookkeeping, ignored
)

// Whiteout says whether the entry is a whiteout and, if so, the path it
// applies to: the hidden path for WhiteoutFile, the directory for
// WhiteoutOpaque.
func (e *Entry) Whiteout() (WhiteoutKind, string) {
	dir, base := path.Split(e.Path)
	switch {
	case !strings.HasPrefix(base, whiteoutPrefix):
		return NotWhiteout, ""
	case base == opaqueMarker:
		return WhiteoutOpaque, path.Clean(dir)
	case strings.HasPrefix(base, whiteoutMeta):
		return WhiteoutMeta, ""
	}
	name := base[len(whiteoutPrefix):]
	if name == "" || name == "." || name == ".." {
		// ".wh." names nothing, and ".wh.." / ".wh..." would hide the
		// directory itself or its parent: nothing a diff writes.
		return WhiteoutMeta, ""
	}
	return WhiteoutFile, dir + name
}
