// Package contents answers what is inside an image without pulling it: the
// merged view of its layers (ls), a file's bytes (cat) and a tar of a path
// (cp), over a layer index kept per layer digest.
//
// An index comes from the first source that applies: an index already
// built (in memory, or on disk under its own budget: indexcache), which was
// read from verified bytes of that digest, so it answers for a local layer
// as well as reading the layer again would; the local layer, read whole (it
// also replaces an index a TOC gave); an eStargz or zstd:chunked TOC
// (internal/layertoc); otherwise one streaming read of the remote layer,
// verified against its digest, that keeps gzip checkpoints
// (internal/gzindex) so that a later file read is one Range request of about
// one span. A pull builds the index of what it downloads in the same pass
// (IndexLayer). A streaming read also keeps the bytes of the files its
// caller is about to read (Image.Want: a cat's path, a package list's
// databases), and a file read on its own is held for the next read of it,
// so neither costs a range request; both are checked against the entry's
// digest like any other read.
//
// An index is keyed by the layer's digest and shared by every image that has
// the layer, but a digest is not a secret: the room answers about an Image,
// never about a digest alone. A remote Image comes from graph/distribution
// only after the caller's credentials resolved its manifest (the registry
// opened that repository to the caller), and its Blobs read with those same
// credentials; a local Image comes from the store, which the API socket
// gives in full.
//
// Files: room.go (the Room, its options and caches), source.go (the sources
// of an index), toc.go, files.go (ls and stat), read.go (a file's bytes,
// verified), archive.go (cp, cat), indexer.go (the pull's hook), flight.go.
package contents

import (
	"context"
	"io"
	"io/fs"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/layerindex"
)

// Image is one platform image whose layers are read: local (graph reads
// them from the store) or remote (graph/distribution resolved the name with
// the caller's credentials, which opened the repository the blobs are read
// from).
type Image struct {
	// Manifest is the platform manifest's descriptor.
	Manifest ocispec.Descriptor
	// Layers are the manifest's layers, bottom first, annotations kept
	// (the TOC digests are there).
	Layers []ocispec.Descriptor
	// DiffIDs are the config's rootfs.diff_ids, when known.
	DiffIDs []digest.Digest
	// Blobs reads the layers.
	Blobs Blobs
	// Want, when not nil, names the files whose bytes the caller is about
	// to read: a layer indexed by a streaming read on this Image's behalf
	// keeps them, so that the reads after cost no range request.
	Want *Want
}

// Want picks files by their header and then, once read, by their bytes.
// A build that other callers share keeps what its first caller wanted;
// the others read their files as before.
type Want struct {
	// File is asked at each regular file's header.
	File func(path string, mode fs.FileMode, size int64) bool
	// Keep, when not nil, is asked once a wanted file is read: false
	// drops its bytes.
	Keep func(path string, mode fs.FileMode, data []byte) bool
}

// keep is the layer index's form of w, within max bytes.
func (w *Want) keep(max int64) layerindex.Keep {
	if w == nil || w.File == nil {
		return layerindex.Keep{}
	}
	k := layerindex.Keep{Max: max, Want: func(e *layerindex.Entry) bool { return w.File(e.Path, e.Mode, e.Size) }}
	if w.Keep != nil {
		k.Check = func(e *layerindex.Entry, data []byte) bool { return w.Keep(e.Path, e.Mode, data) }
	}
	return k
}

// Wanting is img wanting w's files, unless it already wants some (a
// package list's cat wants the databases it reads next, not one file).
func (img *Image) Wanting(w *Want) *Image {
	if img.Want != nil {
		return img
	}
	c := *img
	c.Want = w
	return &c
}

// WantPath wants the one file p.
func WantPath(p string) *Want {
	return &Want{File: func(q string, _ fs.FileMode, _ int64) bool { return q == p }}
}

// Blobs reads an image's layer blobs. graph/distribution satisfies it for a
// remote image (one repository, the caller's credentials), graph for a local
// one (the store's files).
type Blobs interface {
	// Open reads the blob whole from its start; the reader fails at EOF if
	// the bytes do not match desc.
	Open(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error)
	// ReadRange reads bytes [off, off+n) of the blob: one single-range
	// request to a registry, or a section of a local file.
	ReadRange(ctx context.Context, desc ocispec.Descriptor, off, n int64) (io.ReadCloser, error)
	// Local reports whether the blob is a local file (a whole read is
	// cheap).
	Local(desc ocispec.Descriptor) bool
}
