// Package gzindex gives random access into a gzip blob (a layer) through
// decompressor checkpoints. One streaming read of the blob ([NewReader])
// hands out its uncompressed bytes and records, at the first DEFLATE block
// boundary after every span of output, what a decoder needs to start
// there: the compressed bit offset, the uncompressed offset and the last
// 32 KiB of output (the window, kept DEFLATE-compressed). A later read of
// uncompressed [off, off+n) then asks for one byte range of the blob
// ([Index.Locate]) and decodes it from the checkpoint at or before off
// ([Index.Resume], or [Index.ReadAt] with a [RangeReader]).
//
// With the default span of 2 MiB the index is about 0.6 % of the
// uncompressed size on Go source (its windows, compressed at level 1 to
// about 13 KiB; 1.6 % at worst, for incompressible data), and a read of
// 10 KiB costs one range of about one span of compressed bytes.
//
// An Index is not changed by reads: one may serve many at once.
//
// Multi-member gzip (pigz, concatenated streams) is read as compress/gzip
// reads it; a member starts at a byte boundary with no history, so its
// header is a checkpoint that needs no window.
package gzindex

import (
	"errors"
	"fmt"
	"sort"

	"github.com/containerd/errdefs"
	"github.com/wharfproject/wharf/internal/gzindex/flate"
)

const (
	// DefaultSpan is the uncompressed bytes between checkpoints: 2 MiB,
	// so that a window (≤ 32 KiB, stored compressed) costs at most 1.6 %
	// (about 0.6 % on Go source) and a read decodes at most about 2 MiB it
	// does not want, 1 MiB on average: half the range and the inflate of
	// oci.dag.dev's 4 MiB.
	DefaultSpan = 2 << 20

	// MaxCheckpoints caps the checkpoints of one index: 65,536 are 128 GiB
	// of layer at the default span. A build that reaches it records no
	// more (reads past the last one decode from it: slower, still right);
	// a decoded index over it is refused.
	MaxCheckpoints = 1 << 16

	// MaxWindowBytes caps the compressed windows of one index, which is
	// the memory a build holds and most of the encoding: 64 MiB are 2,048
	// incompressible windows (4 GiB of random data at the default span)
	// or about 12 GiB of an ordinary layer (a tar of GOROOT has windows
	// of 10 KiB compressed). Past it reads still work, from the last
	// checkpoint.
	MaxWindowBytes = 64 << 20

	// maxEncodedWindow caps one compressed window: DEFLATE stores 32 KiB
	// of incompressible bytes in 32 KiB and a few block headers.
	maxEncodedWindow = flate.WindowSize + 1024
)

var (
	// ErrInvalidIndex is an index that does not describe a gzip blob: a
	// bad encoding, offsets out of order or past the end, or a checkpoint
	// that the blob's blocks do not agree with.
	ErrInvalidIndex = fmt.Errorf("invalid gzip index%.0w", errdefs.ErrDataLoss)
	// ErrCorrupt is a blob that is not a valid gzip stream.
	ErrCorrupt = fmt.Errorf("corrupt gzip stream%.0w", errdefs.ErrInvalidArgument)
	// errStop ends a resumed read at the checkpoint its span ends at.
	errStop = errors.New("gzindex: end of span")
)

// Index is the checkpoints of one gzip blob.
type Index struct {
	// Span is the uncompressed bytes between checkpoints it was built with.
	Span int64
	// CompressedSize and UncompressedSize are the blob's sizes.
	CompressedSize   int64
	UncompressedSize int64
	// Checkpoints, in order; the first is the blob's start.
	Checkpoints []Checkpoint
	// Capped says the build stopped recording at MaxCheckpoints or
	// MaxWindowBytes: the last checkpoint covers the rest.
	Capped bool
}

// Checkpoint is a point where a decoder can start.
type Checkpoint struct {
	// In is the compressed offset in bits from the blob's start.
	In int64
	// Out is the uncompressed offset.
	Out int64
	// Header says In is the start of a gzip member (byte-aligned, no
	// window); otherwise In is the start of a DEFLATE block.
	Header bool
	// CRC is the CRC-32 (IEEE) of the member's output from its start to
	// Out (0 at a header): a read from here on continues it, so the
	// member's trailer or the next checkpoint checks every byte decoded.
	CRC uint32
	// WindowLen and WindowCRC are the raw window's length (≤ 32 KiB) and
	// CRC-32; Window is the window, DEFLATE-compressed.
	WindowLen int
	WindowCRC uint32
	Window    []byte
}

// Offset is the byte of the blob a read from c starts at.
func (c Checkpoint) Offset() int64 { return c.In / 8 }

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidIndex}, a...)...)
}

// Validate checks what can be checked without the blob: the first
// checkpoint is the start, offsets grow strictly and stay inside the
// sizes, windows are within their caps. Whether each checkpoint is a
// block boundary with that window is checked as a read passes it.
func (ix *Index) Validate() error {
	if ix == nil {
		return invalid("no index")
	}
	cps := ix.Checkpoints
	switch {
	case ix.Span <= 0:
		return invalid("span %d", ix.Span)
	case ix.CompressedSize < 0 || ix.UncompressedSize < 0:
		return invalid("negative size")
	case ix.CompressedSize > (1<<63-1)/8:
		return invalid("compressed size %d", ix.CompressedSize)
	case len(cps) == 0:
		return invalid("no checkpoints")
	case len(cps) > MaxCheckpoints:
		return invalid("%d checkpoints (cap %d)", len(cps), MaxCheckpoints)
	case cps[0].In != 0 || cps[0].Out != 0 || !cps[0].Header:
		return invalid("the first checkpoint is not the blob's start")
	}
	var windows int64
	for i, c := range cps {
		switch {
		case i > 0 && (c.In <= cps[i-1].In || c.Out <= cps[i-1].Out):
			return invalid("checkpoint %d (in %d, out %d) does not follow checkpoint %d (in %d, out %d)", i, c.In, c.Out, i-1, cps[i-1].In, cps[i-1].Out)
		case c.In >= ix.CompressedSize*8 && !(i == 0 && ix.CompressedSize == 0):
			return invalid("checkpoint %d at bit %d is past the blob's %d bytes", i, c.In, ix.CompressedSize)
		case c.Out > ix.UncompressedSize:
			return invalid("checkpoint %d at %d is past the %d uncompressed bytes", i, c.Out, ix.UncompressedSize)
		case c.Header && (c.In%8 != 0 || c.WindowLen != 0 || c.CRC != 0):
			return invalid("checkpoint %d is a member header off a byte boundary, or with a window or a CRC", i)
		case c.WindowLen < 0 || c.WindowLen > flate.WindowSize || int64(c.WindowLen) > c.Out:
			return invalid("checkpoint %d has a window of %d bytes", i, c.WindowLen)
		case len(c.Window) > maxEncodedWindow:
			return invalid("checkpoint %d's window is %d bytes compressed (cap %d)", i, len(c.Window), maxEncodedWindow)
		}
		windows += int64(len(c.Window))
	}
	if windows > MaxWindowBytes {
		return invalid("windows of %d bytes (cap %d)", windows, MaxWindowBytes)
	}
	return nil
}

// Range is what a read of uncompressed bytes asks of the blob: one range
// of compressed bytes, decoded from one checkpoint to another.
type Range struct {
	// From is the checkpoint the read starts at; To is the one it ends at,
	// or len(Checkpoints) for the blob's end.
	From, To int
	// Offset and Length are the compressed bytes to request.
	Offset, Length int64
	// Out is the uncompressed offset of the first byte decoded.
	Out int64
}

// Locate says which bytes of the blob a read of uncompressed
// [off, off+n) needs: from the checkpoint at or before off to the first
// one at or after off+n, or the end.
func (ix *Index) Locate(off, n int64) (Range, error) {
	if err := ix.Validate(); err != nil {
		return Range{}, err
	}
	if off < 0 || n < 0 || off > ix.UncompressedSize || n > ix.UncompressedSize-off {
		return Range{}, fmt.Errorf("uncompressed range [%d, +%d) is outside the blob's %d bytes%.0w", off, n, ix.UncompressedSize, errdefs.ErrInvalidArgument)
	}
	cps := ix.Checkpoints
	from := sort.Search(len(cps), func(i int) bool { return cps[i].Out > off }) - 1
	to := from + 1 + sort.Search(len(cps)-from-1, func(i int) bool { return cps[from+1+i].Out >= off+n })
	s := Range{From: from, To: to, Offset: cps[from].Offset(), Out: cps[from].Out}
	end := ix.CompressedSize
	if to < len(cps) {
		end = (cps[to].In + 7) / 8
	}
	s.Length = end - s.Offset
	return s, nil
}
