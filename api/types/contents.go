package types

import (
	"net/http"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// FilesOptions are the query options of GET /wharf/images/{name}/files and
// of GET and HEAD /wharf/images/{name}/archive: which path of which image,
// local or (Remote) as its registry has it now.
type FilesOptions struct {
	// Path is the path inside the image ("/" when empty).
	Path string
	// Recursive lists everything under Path (recursive=1); otherwise a
	// directory's own entries.
	Recursive bool
	// Layers lists each layer's own entries instead of the merged view
	// (layers=1): whiteouts applied by nothing, every entry once per layer
	// that holds it.
	Layers bool
	// Platform selects the platform manifest; nil: the image's own (local)
	// or the daemon's (remote).
	Platform *ocispec.Platform
	// Remote asks the registry instead of the local store (remote=1), with
	// the caller's credentials as on inspect.
	Remote      bool
	Auth        *registry.AuthConfig
	Registries  map[string]registry.AuthConfig // X-Registry-Config, as RemoteInspectOptions.Registries
	MetaHeaders http.Header
}

// FileEntry is one line of GET /wharf/images/{name}/files (NDJSON): one
// path of the merged view (or, with layers=1, of one layer).
type FileEntry struct {
	Path string
	// Type is one of "file", "dir", "symlink", "hardlink", "char",
	// "block", "fifo".
	Type string
	// Mode is Go's os.FileMode, as docker's ContainerPathStat carries it.
	Mode    uint32
	Uid     int64 //nolint:revive // the wire's spelling, as docker's
	Gid     int64 //nolint:revive // the wire's spelling, as docker's
	Size    int64
	ModTime string // RFC 3339
	// Linkname is a symlink's target as written, or a hardlink's target.
	Linkname string `json:",omitempty"`
	// Layer is the digest of the layer that last set the path.
	Layer string `json:",omitempty"`
	// Digest is the file content's digest, when known.
	Digest string `json:",omitempty"`
	// Source says where the layer's index came from: "layer" (the local
	// layer, read whole), "stream" (the remote layer, read whole once),
	// "estargz" or "zstd:chunked" (the publisher's TOC: a claim, never used
	// for a decision about trust).
	Source string `json:",omitempty"`
}

// File types of FileEntry.Type.
const (
	FileTypeFile     = "file"
	FileTypeDir      = "dir"
	FileTypeSymlink  = "symlink"
	FileTypeHardlink = "hardlink"
	FileTypeChar     = "char"
	FileTypeBlock    = "block"
	FileTypeFifo     = "fifo"
)
