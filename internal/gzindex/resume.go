package gzindex

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	"github.com/wharfproject/wharf/internal/decompress"
	"github.com/wharfproject/wharf/internal/gzindex/flate"
)

// RangeReader reads bytes [off, off+n) of the blob: one single-range
// request (registry blobs), or a section of a local file.
type RangeReader interface {
	ReadRange(ctx context.Context, off, n int64) (io.ReadCloser, error)
}

// Resume decodes range s (from [Index.Locate]) from r, which yields the
// blob's bytes from s.Offset on: what one range request returns. Its
// output starts at uncompressed offset s.Out and ends at checkpoint s.To
// (or the blob's end) with io.EOF. Every checkpoint it passes is checked
// against the blocks it decodes (offsets and window CRC), so an index
// that lies about the blob fails with ErrInvalidIndex; a blob that is not
// gzip fails with ErrCorrupt. The bomb caps (WithLimit) apply to the span.
func (ix *Index) Resume(s Range, r io.Reader, opts ...Option) (io.Reader, error) {
	if err := ix.Validate(); err != nil {
		return nil, err
	}
	cps := ix.Checkpoints
	if s.From < 0 || s.From >= len(cps) || s.To <= s.From || s.To > len(cps) || s.Offset != cps[s.From].Offset() || s.Out != cps[s.From].Out {
		return nil, fmt.Errorf("range %+v does not start at one of this index's checkpoints%.0w", s, errdefs.ErrInvalidArgument)
	}
	window, err := ix.window(s.From)
	if err != nil {
		return nil, err
	}
	o := newOptions(opts)
	in := decompress.NewCounter(r)
	v := &verifier{ix: ix, next: s.From, to: s.To}
	st := &stream{br: bufio.NewReader(in), pos: s.Offset, out: s.Out, boundary: v.check, stopped: v.stopped}
	if !cps[s.From].Header {
		st.enter(cps[s.From], window)
	}
	v.s = st
	return o.limit.Guard(in, &endCheck{s: st, v: v, span: s}), nil
}

// verifier checks the checkpoints a resumed read passes.
type verifier struct {
	ix       *Index
	s        *stream
	next, to int
	win      []byte
}

func (v *verifier) check(bit, out int64, b *flate.Boundary) error {
	cps := v.ix.Checkpoints
	if v.next < len(cps) && cps[v.next].In < bit {
		return invalid("checkpoint %d at bit %d is not where a block or member starts", v.next, cps[v.next].In)
	}
	if v.next >= len(cps) || cps[v.next].In != bit {
		return nil
	}
	c := cps[v.next]
	switch {
	case c.Header && b != nil:
		return invalid("checkpoint %d says a member header starts at bit %d; the blob has a block there", v.next, c.In)
	case !c.Header && b == nil:
		return invalid("checkpoint %d says a block starts at bit %d; the blob has a member header there", v.next, c.In)
	case c.Out != out:
		return invalid("checkpoint %d says bit %d is at uncompressed %d; the blob says %d", v.next, c.In, c.Out, out)
	}
	if b != nil {
		v.win = b.AppendWindow(v.win[:0])
		if len(v.win) != c.WindowLen || crc(v.win) != c.WindowCRC {
			return invalid("checkpoint %d's window is not the blob's", v.next)
		}
	}
	if v.next == v.to {
		return errStop
	}
	v.next++
	return nil
}

// stopped checks the bytes decoded in the span's last member against the
// CRC of the checkpoint it ends at.
func (v *verifier) stopped() error {
	if c := v.ix.Checkpoints[v.to]; !c.Header && v.s.crc != c.CRC {
		return invalid("the bytes decoded up to checkpoint %d fail its CRC", v.to)
	}
	return nil
}

// endCheck turns a span's end into a checked io.EOF: a span to the end
// must yield the whole blob, and one that ends at a checkpoint must
// reach it.
type endCheck struct {
	s    *stream
	v    *verifier
	span Range
}

func (e *endCheck) Read(p []byte) (int, error) {
	n, err := e.s.Read(p)
	if err != io.EOF {
		return n, err
	}
	ix := e.v.ix
	if e.span.To == len(ix.Checkpoints) {
		switch {
		case e.s.out != ix.UncompressedSize:
			e.s.err = invalid("the blob ends at uncompressed %d, the index at %d", e.s.out, ix.UncompressedSize)
			return n, e.s.err
		case e.v.next != len(ix.Checkpoints):
			e.s.err = invalid("checkpoint %d at bit %d is not where a block or member starts", e.v.next, ix.Checkpoints[e.v.next].In)
			return n, e.s.err
		}
	} else if e.s.out != ix.Checkpoints[e.span.To].Out {
		e.s.err = invalid("the blob ends at uncompressed %d, before checkpoint %d", e.s.out, e.span.To)
		return n, e.s.err
	}
	return n, io.EOF
}

// ReadAt reads uncompressed [off, off+n) with one range request from rr,
// decoding from the checkpoint at or before off. Its io.EOF comes after
// the span's end was checked: an error instead means the bytes read may
// be wrong.
func (ix *Index) ReadAt(ctx context.Context, rr RangeReader, off, n int64, opts ...Option) (io.ReadCloser, error) {
	s, err := ix.Locate(off, n)
	if err != nil {
		return nil, err
	}
	body, err := rr.ReadRange(ctx, s.Offset, s.Length)
	if err != nil {
		return nil, err
	}
	// A range longer than asked (a server that ignores Range is caught
	// by the caller) is cut to the span.
	r, err := ix.Resume(s, io.LimitReader(body, s.Length), opts...)
	if err != nil {
		body.Close()
		return nil, err
	}
	if _, err := io.CopyN(io.Discard, r, off-s.Out); err != nil {
		body.Close()
		return nil, unexpected(err)
	}
	return &section{r: r, n: n, c: body}, nil
}

// section is the n bytes wanted of a span, then io.EOF once the rest of
// the span was decoded and checked (at most a span more to decode: the
// check at the span's end covers the bytes handed out), or an error.
type section struct {
	r io.Reader
	n int64
	c io.Closer
}

func (s *section) Read(p []byte) (int, error) {
	if s.n == 0 {
		if _, err := io.Copy(io.Discard, s.r); err != nil {
			return 0, err
		}
		return 0, io.EOF
	}
	if int64(len(p)) > s.n {
		p = p[:s.n]
	}
	n, err := s.r.Read(p)
	s.n -= int64(n)
	if err == io.EOF {
		err = nil
		if s.n > 0 {
			err = unexpected(io.EOF)
		}
	}
	return n, err
}

func (s *section) Close() error { return s.c.Close() }

func unexpected(err error) error {
	if err == io.EOF {
		return fmt.Errorf("%w: the span ended early: %w", ErrInvalidIndex, io.ErrUnexpectedEOF)
	}
	return err
}
