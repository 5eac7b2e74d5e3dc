// Package layerindex is the index of one image layer (every tar entry's
// path, type, mode, owner, size, mtime, link target and place in the
// uncompressed tar stream, keyed by the layer's digest) and the merged view
// over a stack of them: the image's filesystem as a container sees it.
//
// Every source fills the same Index: Build reads a whole tar stream (a
// local layer, or one streaming read of a remote one); the eStargz and
// zstd:chunked readers fill it from a TOC and say so in Source. Merge lays
// indexes bottom first under the OCI whiteout rules and answers Lstat, Stat
// and List, resolving symlinks inside the image's root as docker cp does.
//
// The package reads no registry and no store: it is handed bytes and
// indexes, and it never panics on them. Every size it reads from outside is
// capped by Limits.
package layerindex

import (
	"encoding/hex"
	"errors"
	"io/fs"
	"time"

	"github.com/opencontainers/go-digest"
)

// Type is an entry's kind, spelled as the files API spells it.
type Type uint8

// The entry types. The zero Type is invalid so that a forgotten field is
// caught by Decode and by the tests.
const (
	TypeFile Type = iota + 1
	TypeDir
	TypeSymlink
	TypeHardlink
	TypeChar
	TypeBlock
	TypeFIFO
)

var typeNames = [...]string{"", "file", "dir", "symlink", "hardlink", "char", "block", "fifo"}

// String is the API's spelling ("file", "dir", …).
func (t Type) String() string {
	if int(t) < len(typeNames) && t != 0 {
		return typeNames[t]
	}
	return "invalid"
}

// Valid reports whether t is one of the seven types.
func (t Type) Valid() bool { return t >= TypeFile && t <= TypeFIFO }

// Source says where an index came from. An index from a TOC is the
// publisher's claim about the layer: it never decides a question of trust.
type Source uint8

// The sources, in the order wharf prefers them.
const (
	SourceLayer       Source = iota + 1 // the local layer, read whole
	SourceEstargz                       // an eStargz TOC
	SourceZstdChunked                   // a zstd:chunked TOC
	SourceStream                        // one streaming read of the remote layer
)

var sourceNames = [...]string{"", "layer", "estargz", "zstd:chunked", "stream"}

func (s Source) String() string {
	if int(s) < len(sourceNames) && s != 0 {
		return sourceNames[s]
	}
	return "invalid"
}

// Valid reports whether s is one of the four sources.
func (s Source) Valid() bool { return s >= SourceLayer && s <= SourceStream }

// FromTOC reports whether the index is the publisher's claim rather than
// wharf's own reading of the layer's bytes.
func (s Source) FromTOC() bool { return s == SourceEstargz || s == SourceZstdChunked }

// Entry is one tar entry of one layer.
type Entry struct {
	// Path is cleaned and absolute ("/", "/etc/passwd"); a name that climbs
	// above the root is refused by Build, never rewritten.
	Path string
	Type Type
	// Mode is Go's os.FileMode as docker's ContainerPathStat carries it:
	// type bits, permissions, setuid, setgid and sticky.
	Mode     fs.FileMode
	UID, GID int64
	// Size is the file's logical size (a sparse file's too); the target's
	// length for a symlink; 0 for the other types.
	Size    int64
	ModTime time.Time
	// Linkname is a symlink's target as written, or a hardlink's target as
	// a cleaned absolute path inside the same layer.
	Linkname           string
	Devmajor, Devminor int64
	// HeaderOffset is where the entry's first header block (PAX and GNU
	// long-name blocks included) starts in the uncompressed tar stream, and
	// DataOffset where its data starts; -1 when the source does not know
	// (a TOC). A sparse file's data is not contiguous: it is read by parsing
	// the headers again from HeaderOffset with archive/tar, which expands
	// the holes.
	HeaderOffset, DataOffset int64
	// Sparse marks a GNU sparse file (old GNU or PAX 0.0/0.1/1.0 format).
	Sparse bool
	// SHA256 is the sha256 of the file's content when HasDigest: computed
	// by Build as it read the layer, or claimed by a TOC.
	SHA256    [32]byte
	HasDigest bool
}

// Digest is the content's digest, or "" when not known.
func (e *Entry) Digest() digest.Digest {
	if !e.HasDigest {
		return ""
	}
	// Once per listed file: go-digest's NewDigestFromBytes formats
	// through fmt ("%x"), several times hex's cost.
	return digest.Digest("sha256:" + hex.EncodeToString(e.SHA256[:]))
}

// DataRange is where a file's bytes lie in the uncompressed tar stream,
// [off, off+n), when they lie there contiguously: not for a sparse file
// (read it from HeaderOffset through archive/tar), nor when the source
// recorded no offsets.
func (e *Entry) DataRange() (off, n int64, ok bool) {
	if e.Type != TypeFile || e.Sparse || e.DataOffset < 0 {
		return 0, 0, false
	}
	return e.DataOffset, e.Size, true
}

// Index is the index of one layer.
type Index struct {
	// Layer is the key: the layer's digest as the manifest names it. Build
	// leaves it to the caller, who knows the descriptor.
	Layer  digest.Digest
	Source Source
	// DiffID is the sha256 of the uncompressed tar stream, and TarSize its
	// length, when the layer was read whole ("" and -1 from a TOC).
	DiffID  digest.Digest
	TarSize int64
	// Entries are in tar order. A path may repeat: the later one wins, as
	// it does when the layer is applied.
	Entries []Entry
}

// Errors. Each also wraps the errdefs class the API maps to a status.
var (
	// ErrLimit is a layer, index or view over one of Limits.
	ErrLimit = errors.New("layer index limit exceeded")
	// ErrTraversal is an entry or hardlink name that climbs above the root.
	ErrTraversal = errors.New("tar entry path climbs above the root")
	// ErrInvalidTar is a tar stream archive/tar refuses, or an entry of a
	// type a layer cannot hold.
	ErrInvalidTar = errors.New("invalid layer tar")
	// ErrCorrupt is an encoded index that does not decode.
	ErrCorrupt = errors.New("corrupt layer index")
	// ErrNotFound is a path the view does not hold.
	ErrNotFound = errors.New("no such file or directory")
	// ErrNotDir is a path that goes through something not a directory.
	ErrNotDir = errors.New("not a directory")
	// ErrSymlinkLoop is a symlink chain longer than MaxSymlinkHops.
	ErrSymlinkLoop = errors.New("too many levels of symbolic links")
	// ErrBrokenHardlink is a hardlink whose target is absent or a directory
	// when its layer is applied: applying the layer would fail too.
	ErrBrokenHardlink = errors.New("hardlink target missing or a directory")
)
