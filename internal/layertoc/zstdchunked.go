package layertoc

import (
	"context"
	"encoding/binary"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/decompress"
)

// The zstd:chunked layout (containers/storage pkg/chunked): one zstd
// frame per tar header and per file chunk, then skippable frames with
// the TOC (zstd-compressed JSON), the tar-split data and a footer. The
// manifest-position annotation gives the TOC frame's payload and the
// manifest-checksum annotation its digest, so listing needs no footer.
//
// The tar-split frame is not read: it only lets a puller rebuild the
// tar stream byte for byte (its DiffID); files and their metadata come
// from the TOC, whose entries are the tar's.
const (
	zstdSkippableHeader = 8          // magic and payload length, little-endian
	zstdSkippableMagic  = 0x184D2A50 // the first of the 16 skippable magics
	zstdManifestCRFS    = 1          // the TOC type containers/storage writes
)

// parsePosition reads "offset:length:lengthUncompressed:type".
func parsePosition(s string) (off, n, nu int64, err error) {
	f := strings.Split(s, ":")
	if len(f) != 4 {
		return 0, 0, 0, invalid("annotation %s is %.100q, want offset:length:lengthUncompressed:type", AnnotationZstdChunkedPosition, s)
	}
	var v [4]int64
	for i, x := range f {
		if x == "" || strings.TrimLeft(x, "0123456789") != "" {
			return 0, 0, 0, invalid("annotation %s is %.100q: field %d is not a decimal number", AnnotationZstdChunkedPosition, s, i+1)
		}
		if v[i], err = strconv.ParseInt(x, 10, 64); err != nil {
			return 0, 0, 0, invalid("annotation %s is %.100q: %v", AnnotationZstdChunkedPosition, s, err)
		}
	}
	if v[3] != zstdManifestCRFS {
		return 0, 0, 0, invalid("annotation %s: TOC type %d, want %d", AnnotationZstdChunkedPosition, v[3], zstdManifestCRFS)
	}
	return v[0], v[1], v[2], nil
}

func readZstdChunked(ctx context.Context, rr RangeReader, desc ocispec.Descriptor, lim Limits) (*TOC, error) {
	want, err := digest.Parse(desc.Annotations[AnnotationZstdChunkedChecksum])
	if err != nil {
		return nil, invalid("annotation %s: %v", AnnotationZstdChunkedChecksum, err)
	}
	off, n, nu, err := parsePosition(desc.Annotations[AnnotationZstdChunkedPosition])
	if err != nil {
		return nil, err
	}
	if n > lim.TOCCompressed {
		return nil, tooLarge("TOC of %d bytes compressed (limit %d)", n, lim.TOCCompressed)
	}
	if nu > lim.TOCUncompressed {
		return nil, tooLarge("TOC of %d bytes uncompressed (limit %d)", nu, lim.TOCUncompressed)
	}
	if n <= 0 || off < zstdSkippableHeader || off > desc.Size-n {
		return nil, invalid("TOC at bytes %d-%d lies outside the blob's %d bytes", off, off+n, desc.Size)
	}
	// The frame header is fetched with the payload (same request) so that
	// the annotation is checked against what the blob holds there.
	rc, err := rr.ReadRange(ctx, off-zstdSkippableHeader, n+zstdSkippableHeader)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	entries, err := parseZstdChunkedTOC(rc, want, n, nu, off-zstdSkippableHeader, lim)
	if err != nil {
		return nil, err
	}
	return &TOC{Digest: want, Entries: entries}, nil
}

// parseZstdChunkedTOC reads a skippable frame whose payload is n bytes
// of zstd holding nu bytes of TOC JSON hashing (compressed) to want,
// and lists its entries; the layer's data ends at dataEnd.
func parseZstdChunkedTOC(r io.Reader, want digest.Digest, n, nu, dataEnd int64, lim Limits) ([]Entry, error) {
	var hdr [zstdSkippableHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, invalid("TOC frame header: %v", err)
	}
	if binary.LittleEndian.Uint32(hdr[:4]) != zstdSkippableMagic || int64(binary.LittleEndian.Uint32(hdr[4:])) != n {
		return nil, invalid("no skippable frame of %d bytes where the annotation puts the TOC", n)
	}
	dg := want.Algorithm().Digester()
	in := decompress.NewCounter(io.TeeReader(io.LimitReader(r, n), dg.Hash()))
	zd, err := newZstdReader(in, lim.TOCUncompressed)
	if err != nil {
		return nil, invalid("TOC zstd: %v", err)
	}
	defer zd.Close()
	out := &countReader{r: io.LimitReader(lim.limitDecompress().Guard(in, zd), nu+1)}
	f := newFolder(SourceZstdChunked, lim)
	perr := decodeEntries(out, lim, f.add)
	if _, err := io.Copy(io.Discard, in); err != nil {
		return nil, invalid("reading the TOC: %v", err)
	}
	if in.N() != n {
		return nil, invalid("TOC ended after %d of %d bytes: %v", in.N(), n, io.ErrUnexpectedEOF)
	}
	if got := dg.Digest(); got != want {
		return nil, mismatch("TOC hashes to %s, the annotation %s says %s", got, AnnotationZstdChunkedChecksum, want)
	}
	if perr != nil {
		return nil, perr
	}
	if out.n != nu {
		return nil, invalid("TOC decompressed to %d bytes, the annotation says %d", out.n, nu)
	}
	return f.finish(dataEnd)
}

// newZstdReader decodes r in this goroutine with its memory capped at
// maxMem: klauspost's decoder applies it to the window, which a frame
// declares (a hostile frame could ask for 2 GiB).
func newZstdReader(r io.Reader, maxMem int64) (*zstd.Decoder, error) {
	return zstd.NewReader(r,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(max(maxMem, zstd.MinWindowSize))),
		zstd.WithDecoderMaxWindow(uint64(max(min(maxMem, zstd.MaxWindowSize), zstd.MinWindowSize))))
}
