package gzindex

import (
	"bufio"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	"github.com/wharfproject/wharf/internal/decompress"
	"github.com/wharfproject/wharf/internal/gzindex/flate"
)

// Option sets how an index is built or read.
type Option func(*options)

type options struct {
	span           int64
	limit          decompress.Limit
	maxCheckpoints int
	maxWindowBytes int64
}

func newOptions(opts []Option) options {
	o := options{span: DefaultSpan, maxCheckpoints: MaxCheckpoints, maxWindowBytes: MaxWindowBytes}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithSpan sets the uncompressed bytes between checkpoints (DefaultSpan;
// tests use a few bytes to checkpoint every block). n < 1 means 1.
func WithSpan(n int64) Option { return func(o *options) { o.span = max(1, n) } }

// WithLimit sets the decompression-bomb cap of a read (the zero Limit is
// decompress's defaults: 8 GiB + 128× the compressed bytes read).
func WithLimit(l decompress.Limit) Option { return func(o *options) { o.limit = l } }

// WithCaps lowers the build's caps on checkpoints and window bytes (tests
// reach them with small blobs); values over MaxCheckpoints and
// MaxWindowBytes are ignored, since a decoder would refuse the index.
func WithCaps(checkpoints int, windowBytes int64) Option {
	return func(o *options) {
		o.maxCheckpoints = min(max(1, checkpoints), MaxCheckpoints)
		o.maxWindowBytes = min(max(0, windowBytes), MaxWindowBytes)
	}
}

// Reader hands out the uncompressed bytes of a gzip blob and builds its
// index on the way; the index is complete once Read returned io.EOF.
type Reader struct {
	o       options
	in      *decompress.Counter
	s       stream
	guarded io.Reader
	ix      Index
	windows int64
	codec   windowCodec
	win     []byte
	err     error
}

// NewReader reads the gzip blob r (all of its members) from its start.
func NewReader(r io.Reader, opts ...Option) *Reader {
	z := &Reader{o: newOptions(opts)}
	z.in = decompress.NewCounter(r)
	z.s.br = bufio.NewReader(z.in)
	z.s.boundary = z.checkpoint
	z.guarded = z.o.limit.Guard(z.in, &z.s)
	z.ix.Span = z.o.span
	return z
}

func (z *Reader) Read(p []byte) (int, error) {
	n, err := z.guarded.Read(p)
	switch {
	case err == io.EOF:
		z.ix.CompressedSize, z.ix.UncompressedSize = z.s.pos, z.s.out
	case err != nil:
		z.err = err
	}
	return n, err
}

// Index returns the index once the blob was read to its end.
func (z *Reader) Index() (*Index, error) {
	if z.err != nil {
		return nil, z.err
	}
	if z.s.err != io.EOF {
		return nil, fmt.Errorf("the gzip blob was not read to its end%.0w", errdefs.ErrFailedPrecondition)
	}
	ix := z.ix
	return &ix, nil
}

// checkpoint records the first start point after each span of output.
func (z *Reader) checkpoint(bit, out int64, b *flate.Boundary) error {
	cps := z.ix.Checkpoints
	if len(cps) > 0 && (out-cps[len(cps)-1].Out < z.o.span || z.ix.Capped) {
		return nil
	}
	if len(cps) == 0 && bit != 0 {
		return nil // not reached: the blob's start is a member header
	}
	c := Checkpoint{In: bit, Out: out, Header: b == nil}
	if b != nil {
		z.win = b.AppendWindow(z.win[:0])
		enc, err := z.codec.encode(z.win)
		if err != nil {
			return err
		}
		c.WindowLen, c.WindowCRC, c.Window = len(z.win), crc(z.win), enc
	}
	if len(cps) >= z.o.maxCheckpoints || z.windows+int64(len(c.Window)) > z.o.maxWindowBytes {
		z.ix.Capped = true
		return nil
	}
	z.windows += int64(len(c.Window))
	z.ix.Checkpoints = append(cps, c)
	if b != nil {
		i := len(z.ix.Checkpoints) - 1
		z.s.markCRC(out, func(crc uint32) { z.ix.Checkpoints[i].CRC = crc })
	}
	return nil
}

// Build reads the gzip blob r to its end and returns its index.
func Build(r io.Reader, opts ...Option) (*Index, error) {
	z := NewReader(r, opts...)
	if _, err := io.Copy(io.Discard, z); err != nil {
		return nil, err
	}
	return z.Index()
}
