// Package layertoc lists a layer's files from the table of contents its
// publisher embedded in it, eStargz or zstd:chunked, without downloading
// the layer, and reads one file's bytes through that table's chunks.
//
// The layer is reached through a RangeReader: one single-range request
// per call (some blob CDNs refuse multi-range requests). Listing costs
// at most 2 requests for eStargz (the tail, holding the footer and
// usually the whole TOC, then the TOC if the tail missed it) and exactly
// 1 for zstd:chunked (its manifest annotations give the TOC's range).
//
// A TOC is the publisher's claim about its layer: its digest is checked
// against the manifest's annotation and every chunk read against the
// TOC's chunk digests, but the TOC may still disagree with the tar stream
// that the layer's digest covers. Answers built from it carry Source so
// that they can say so, and nothing here decides about trust.
//
// An eStargz layer's TOC is itself a tar entry, /stargz.index.json, that
// a container applying the layer gets: it is listed too, as the tar has
// it, and read like any file (its digest is the annotated one).
package layertoc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/containerd/errdefs"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/decompress"
)

// RangeReader reads bytes [off, off+n) of one blob in one single-range
// request. The registry client satisfies it for a layer it was opened
// for, with the caller's credentials.
type RangeReader interface {
	ReadRange(ctx context.Context, off, n int64) (io.ReadCloser, error)
}

// Source names the table an answer comes from.
type Source string

const (
	SourceEStargz     Source = "estargz"
	SourceZstdChunked Source = "zstd:chunked"
)

// The annotations of a layer descriptor that announce a TOC.
const (
	// AnnotationEStargzTOCDigest is the sha256 of the eStargz TOC JSON.
	AnnotationEStargzTOCDigest = "containerd.io/snapshot/stargz/toc.digest"
	// AnnotationZstdChunkedPosition is "offset:length:lengthUncompressed:type"
	// of the zstd:chunked TOC frame's payload.
	AnnotationZstdChunkedPosition = "io.github.containers.zstd-chunked.manifest-position"
	// AnnotationZstdChunkedChecksum is the digest of the compressed TOC.
	AnnotationZstdChunkedChecksum = "io.github.containers.zstd-chunked.manifest-checksum"
)

// Type is an entry's kind, as the layer index and the API name it.
type Type string

const (
	TypeFile     Type = "file"
	TypeDir      Type = "dir"
	TypeSymlink  Type = "symlink"
	TypeHardlink Type = "hardlink"
	TypeChar     Type = "char"
	TypeBlock    Type = "block"
	TypeFifo     Type = "fifo"
)

// Entry is one tar entry as the TOC describes it.
type Entry struct {
	// Path is cleaned and absolute within the layer: "/", "/etc/passwd".
	Path string
	Type Type
	// Mode is Go's os.FileMode as docker's ContainerPathStat has it: type
	// bits, permissions, setuid, setgid and sticky.
	Mode     fs.FileMode
	UID, GID int
	Size     int64
	ModTime  time.Time
	// Linkname is a symlink's target as written, or a hardlink's target
	// path cleaned as Path is.
	Linkname           string
	Devmajor, Devminor int64
	// Digest is the file content's digest, when the TOC gives it.
	Digest digest.Digest
	// Chunks tile a file's content in order; empty for an empty file.
	Chunks []Chunk
}

// Chunk is a piece of a file's content and where it lies in the blob.
type Chunk struct {
	// Offset and CompressedSize are the compressed stream (gzip member or
	// zstd frame) holding the chunk: one range of the blob.
	Offset, CompressedSize int64
	// InnerOffset is where the chunk starts in that stream, decompressed
	// (eStargz packs small files into one gzip member; 0 otherwise).
	InnerOffset int64
	// FileOffset and Size place the chunk in the file, uncompressed.
	FileOffset, Size int64
	// Digest is the uncompressed chunk's digest.
	Digest digest.Digest
}

// TOC is a layer's table of contents.
type TOC struct {
	Source Source
	// Layer is the layer's digest; Digest is the TOC's, as annotated.
	Layer, Digest digest.Digest
	Entries       []Entry
}

// The errors of this package, each also carrying an errdefs class.
var (
	// ErrNoTOC: the descriptor announces no TOC (the layer is then
	// indexed by a streaming read). NotFound.
	ErrNoTOC = fmt.Errorf("layer has no eStargz or zstd:chunked TOC annotation%.0w", errdefs.ErrNotFound)
	// ErrInvalidTOC: the annotations, footer or TOC are malformed or lie.
	ErrInvalidTOC = fmt.Errorf("invalid layer TOC%.0w", errdefs.ErrDataLoss)
	// ErrDigestMismatch: a TOC or a chunk does not hash to its digest.
	ErrDigestMismatch = fmt.Errorf("layer TOC digest mismatch%.0w", errdefs.ErrDataLoss)
	// ErrTooLarge: a size read from the layer is past a cap of Limits.
	ErrTooLarge = fmt.Errorf("layer TOC over a limit%.0w", errdefs.ErrResourceExhausted)
)

func invalid(format string, args ...any) error {
	return fmt.Errorf(format+"%.0w", append(args, ErrInvalidTOC)...)
}

func tooLarge(format string, args ...any) error {
	return fmt.Errorf(format+"%.0w", append(args, ErrTooLarge)...)
}

func mismatch(format string, args ...any) error {
	return fmt.Errorf(format+"%.0w", append(args, ErrDigestMismatch)...)
}

// Detect says which TOC the descriptor announces: ErrNoTOC when none,
// ErrInvalidTOC when both or when the media type contradicts it. A layer
// whose footer says stargz but whose descriptor has no TOC digest is not
// read here: nothing would vouch for its TOC, so it is indexed by a
// streaming read instead.
func Detect(desc ocispec.Descriptor) (Source, error) {
	_, es := desc.Annotations[AnnotationEStargzTOCDigest]
	_, zc := desc.Annotations[AnnotationZstdChunkedChecksum]
	_, zp := desc.Annotations[AnnotationZstdChunkedPosition]
	switch {
	case es && (zc || zp):
		return "", invalid("layer %s announces both an eStargz and a zstd:chunked TOC", desc.Digest)
	case es:
		if c := compressionOf(desc.MediaType); c != "" && c != "gzip" {
			return "", invalid("layer %s announces an eStargz TOC but is %s (eStargz over zstd is not read)", desc.Digest, desc.MediaType)
		}
		return SourceEStargz, nil
	case zc && zp:
		if c := compressionOf(desc.MediaType); c != "" && c != "zstd" {
			return "", invalid("layer %s announces a zstd:chunked TOC but is %s", desc.Digest, desc.MediaType)
		}
		return SourceZstdChunked, nil
	case zc || zp:
		return "", invalid("layer %s has only one of the zstd:chunked annotations %s and %s", desc.Digest, AnnotationZstdChunkedPosition, AnnotationZstdChunkedChecksum)
	}
	return "", ErrNoTOC
}

// compressionOf is "gzip", "zstd", "other", or "" for no media type.
func compressionOf(mediaType string) string {
	switch mediaType {
	case "":
		return ""
	case ocispec.MediaTypeImageLayerGzip, ocispec.MediaTypeImageLayerNonDistributableGzip, //nolint:staticcheck // still served
		"application/vnd.docker.image.rootfs.diff.tar.gzip",
		"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip":
		return "gzip"
	case ocispec.MediaTypeImageLayerZstd, ocispec.MediaTypeImageLayerNonDistributableZstd: //nolint:staticcheck // still served
		return "zstd"
	}
	return "other"
}

// Read fetches and checks the TOC the descriptor announces and lists its
// entries: ErrNoTOC without any request when it announces none.
func Read(ctx context.Context, rr RangeReader, desc ocispec.Descriptor, opts ...Option) (*TOC, error) {
	src, err := Detect(desc)
	if err != nil {
		return nil, err
	}
	lim := DefaultLimits()
	for _, o := range opts {
		o(&lim)
	}
	if desc.Size <= 0 {
		return nil, invalid("layer %s: descriptor size %d", desc.Digest, desc.Size)
	}
	var t *TOC
	switch src {
	case SourceEStargz:
		t, err = readEStargz(ctx, rr, desc, lim)
	case SourceZstdChunked:
		t, err = readZstdChunked(ctx, rr, desc, lim)
	}
	if err != nil {
		return nil, fmt.Errorf("layer %s: %s TOC: %w", desc.Digest, src, err)
	}
	t.Source, t.Layer = src, desc.Digest
	return t, nil
}

// readFull reads exactly n bytes of [off, off+n) in one request.
func readFull(ctx context.Context, rr RangeReader, off, n int64) ([]byte, error) {
	rc, err := rr.ReadRange(ctx, off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b := make([]byte, n)
	if _, err := io.ReadFull(rc, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("reading bytes %d-%d of the blob: %w%.0w", off, off+n-1, err, errdefs.ErrDataLoss)
	}
	return b, nil
}

// limitDecompress is the bomb cap every decompression here is under.
func (l Limits) limitDecompress() decompress.Limit { return l.Decompress.OrDefault() }
