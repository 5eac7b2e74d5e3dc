package layertoc

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	"github.com/klauspost/compress/zstd"
	digest "github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/internal/decompress"
)

// ReadFile writes the content of the file e, listed by a TOC of kind
// src, to w, reading its chunks through rr: one request for each run of
// adjacent compressed streams, so one for a file whose chunks follow
// each other, as both writers lay them out. Each chunk is decompressed
// into memory (at most Limits.ChunkSize bytes), checked against its
// digest and only then written; the last one only once the whole file
// also matches the file's digest, when the TOC gives one. So w receives
// verified bytes only, and on an error a verified prefix of the file.
// Memory: two chunks. A hardlink is read as the file it names (the
// caller looks that entry up); Entries stored elsewhere and handed back
// are checked again as the TOC's were.
func ReadFile(ctx context.Context, rr RangeReader, src Source, e *Entry, w io.Writer, opts ...Option) error {
	lim := DefaultLimits()
	for _, o := range opts {
		o(&lim)
	}
	if err := checkReadable(e, lim); err != nil {
		return err
	}
	r := &fileReader{src: src, lim: lim, w: w, e: e}
	if e.Digest != "" {
		r.fileDg = e.Digest.Algorithm().Digester()
	}
	if src == SourceZstdChunked {
		zd, err := newZstdReader(nil, lim.ChunkSize)
		if err != nil {
			return err
		}
		defer zd.Close()
		r.zd = zd
	}
	for _, run := range plan(e.Chunks) {
		if err := r.readRun(ctx, rr, run); err != nil {
			return fmt.Errorf("%s file %q: %w", src, e.Path, err)
		}
	}
	if r.fileDg != nil {
		if got := r.fileDg.Digest(); got != e.Digest {
			return mismatch("%s file %q hashes to %s, the TOC says %s", src, e.Path, got, e.Digest)
		}
	}
	if _, err := w.Write(r.held); err != nil {
		return err
	}
	return nil
}

func checkReadable(e *Entry, lim Limits) error {
	if e.Type != TypeFile {
		return fmt.Errorf("%q is a %s, not a regular file%.0w", e.Path, e.Type, errdefs.ErrInvalidArgument)
	}
	if len(e.Chunks) > lim.ChunksPerFile {
		return tooLarge("file %q has %d chunks (limit %d)", e.Path, len(e.Chunks), lim.ChunksPerFile)
	}
	for j, c := range e.Chunks {
		if c.Size > lim.ChunkSize {
			return tooLarge("file %q: chunk %d of %d bytes (limit %d)", e.Path, j, c.Size, lim.ChunkSize)
		}
		if c.Offset < 0 || c.CompressedSize <= 0 || c.InnerOffset < 0 || c.Digest.Validate() != nil {
			return invalid("file %q: chunk %d at %d of %d bytes, digest %q", e.Path, j, c.Offset, c.CompressedSize, c.Digest)
		}
	}
	return checkTiling(e)
}

// stream is one gzip member (or run of members) or zstd frame, holding
// one or more chunks of the file; run is adjacent streams.
type stream struct {
	off, end int64
	chunks   []Chunk
}

type run struct {
	off, end int64
	streams  []stream
}

func plan(chunks []Chunk) []run {
	var runs []run
	for _, c := range chunks {
		if n := len(runs); n > 0 {
			r := &runs[n-1]
			if s := &r.streams[len(r.streams)-1]; s.off == c.Offset {
				s.chunks = append(s.chunks, c)
				continue
			}
			if r.end == c.Offset {
				r.streams = append(r.streams, stream{off: c.Offset, end: c.Offset + c.CompressedSize, chunks: []Chunk{c}})
				r.end = c.Offset + c.CompressedSize
				continue
			}
		}
		end := c.Offset + c.CompressedSize
		runs = append(runs, run{off: c.Offset, end: end, streams: []stream{{off: c.Offset, end: end, chunks: []Chunk{c}}}})
	}
	return runs
}

type fileReader struct {
	src    Source
	lim    Limits
	w      io.Writer
	e      *Entry
	zd     *zstd.Decoder
	fileDg digest.Digester
	held   []byte // the last verified chunk, written once the file is
}

func (r *fileReader) readRun(ctx context.Context, rr RangeReader, run run) error {
	rc, err := rr.ReadRange(ctx, run.off, run.end-run.off)
	if err != nil {
		return err
	}
	defer rc.Close()
	body := &exactReader{r: rc, left: run.end - run.off}
	for _, s := range run.streams {
		sr := io.LimitReader(body, s.end-s.off)
		if err := r.readStream(sr, s); err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, sr); err != nil {
			return err
		}
	}
	return nil
}

func (r *fileReader) readStream(sr io.Reader, s stream) error {
	in := decompress.NewCounter(sr)
	var dec io.Reader
	switch r.src {
	case SourceEStargz:
		zr, err := gzip.NewReader(in)
		if err != nil {
			return invalid("gzip member at %d: %v", s.off, err)
		}
		dec = zr
	case SourceZstdChunked:
		if err := r.zd.Reset(in); err != nil {
			return invalid("zstd frame at %d: %v", s.off, err)
		}
		dec = r.zd
	default:
		return fmt.Errorf("unknown TOC source %q%.0w", r.src, errdefs.ErrInvalidArgument)
	}
	out := r.lim.limitDecompress().Guard(in, dec)
	var pos int64
	for _, c := range s.chunks {
		if c.InnerOffset < pos {
			return invalid("chunk at %d+%d overlaps the one before", s.off, c.InnerOffset)
		}
		if _, err := io.CopyN(io.Discard, out, c.InnerOffset-pos); err != nil {
			return decodeErr(s.off, err)
		}
		buf := make([]byte, c.Size)
		if _, err := io.ReadFull(out, buf); err != nil {
			return decodeErr(s.off, err)
		}
		pos = c.InnerOffset + c.Size
		if got := c.Digest.Algorithm().FromBytes(buf); got != c.Digest {
			return mismatch("chunk at file offset %d hashes to %s, the TOC says %s", c.FileOffset, got, c.Digest)
		}
		if r.held != nil {
			if _, err := r.w.Write(r.held); err != nil {
				return err
			}
		}
		if r.fileDg != nil {
			r.fileDg.Hash().Write(buf)
		}
		r.held = buf
	}
	return nil
}

func decodeErr(off int64, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if errdefs.IsDataLoss(err) || errdefs.IsInvalidArgument(err) {
		return err // the blob ended early, or the bomb cap
	}
	return invalid("stream at %d does not hold the chunk the TOC puts there: %v", off, err)
}

// exactReader reads what a range request returns, refusing to read past
// its length and calling a short body data loss.
type exactReader struct {
	r    io.Reader
	left int64
}

func (x *exactReader) Read(p []byte) (int, error) {
	if x.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > x.left {
		p = p[:x.left]
	}
	n, err := x.r.Read(p)
	x.left -= int64(n)
	if errors.Is(err, io.EOF) && x.left > 0 {
		return n, fmt.Errorf("range response ended %d bytes early: %w%.0w", x.left, io.ErrUnexpectedEOF, errdefs.ErrDataLoss)
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}
