package layerindex

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/internal/safetar"
)

// copyBuffer is Build's read size: large enough that hashing, not the
// loop, costs the time.
const copyBuffer = 64 << 10

// Build indexes the uncompressed tar stream r in one pass, hashing every
// file's content and the whole stream (DiffID) as it goes. It reads r to
// its end, trailing bytes after the end-of-archive blocks included, so the
// caller's digest check sees every byte. The index's Source is SourceLayer
// and its Layer is empty: the caller knows which descriptor it read and
// sets both.
//
// Memory is the index itself (bounded by lim) plus one copy buffer; what r
// may expand to is the caller's decompressor's to cap.
func Build(ctx context.Context, r io.Reader, lim Limits) (*Index, error) {
	ix, _, err := BuildWith(ctx, r, lim, Options{})
	return ix, err
}

// Options are BuildWith's: the files whose bytes to keep, and what the
// caller already knows of the stream.
type Options struct {
	Keep Keep
	// DiffID, when set, is the stream's digest as the caller verifies it
	// (a plain tar layer's own digest, checked as its blob is read): the
	// pass does not hash the stream again, a third of its hashing.
	DiffID digest.Digest
}

// Keep asks BuildWith for the bytes of some regular files as the pass
// reads them, so that a caller about to read those files (a cat, a package
// database) needs no second read of the layer.
type Keep struct {
	// Want is asked at each regular file's header (not a sparse one, whose
	// holes are in its headers); nil keeps nothing.
	Want func(e *Entry) bool
	// Check, when not nil, is asked once a wanted file was read: false
	// drops its bytes (a binary that is not the kind looked for).
	Check func(e *Entry, data []byte) bool
	// Max caps the bytes kept in all, and so the largest file kept.
	Max int64
}

// Kept are one file's bytes, by its entry's HeaderOffset. They are what
// the pass read, hashed into the entry's SHA256; the caller believes them
// only as far as it believes the stream (its digest checked at EOF).
// Declined (Data nil): the file was wanted and read whole, and Check
// dropped it, so a caller need not read it again to learn the same.
type Kept struct {
	HeaderOffset int64
	Data         []byte
	Declined     bool
}

// BuildWith is Build that also returns the bytes of the files
// opts.Keep wants, within its Max.
func BuildWith(ctx context.Context, r io.Reader, lim Limits, opts Options) (*Index, []Kept, error) {
	lim = lim.orDefault()
	keep := opts.Keep
	var stream hash.Hash
	cr := &countingReader{r: r}
	if opts.DiffID == "" {
		stream = sha256.New()
		cr.r = io.TeeReader(r, stream)
	}
	tr := tar.NewReader(cr)
	b := budget{lim: lim}
	ix := &Index{Source: SourceLayer}
	var entries chunks
	buf := make([]byte, copyBuffer)
	content := sha256.New()
	var kept []Kept
	var scratch []byte // a wanted file's bytes until Check keeps or drops them
	room := keep.Max
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		// The previous entry was read to its end, so the next header starts
		// at the next 512-byte block.
		start := (cr.n + 511) &^ 511
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, tarErr(start, err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			// A PAX global header sets defaults archive/tar has already
			// applied to the entries after it; it is no file.
			if _, err := io.CopyBuffer(io.Discard, tr, buf); err != nil {
				return nil, nil, tarErr(start, err)
			}
			continue
		}
		e, err := entryOf(hdr)
		if err != nil {
			return nil, nil, err
		}
		e.HeaderOffset, e.DataOffset = start, cr.n
		if err := b.add(&e); err != nil {
			return nil, nil, err
		}
		var h hash.Hash
		if e.Type == TypeFile {
			content.Reset()
			h = content
		}
		var w io.Writer
		if e.Type == TypeFile && !e.Sparse && keep.Want != nil && e.Size <= room && keep.Want(&e) {
			scratch = scratch[:0]
			w = (*appender)(&scratch)
		}
		if err := drain(tr, h, w, buf); err != nil {
			return nil, nil, tarErr(start, err)
		}
		if w != nil && int64(len(scratch)) == e.Size {
			if keep.Check == nil || keep.Check(&e, scratch) {
				kept = append(kept, Kept{HeaderOffset: e.HeaderOffset, Data: bytes.Clone(scratch)})
				room -= e.Size
			} else {
				kept = append(kept, Kept{HeaderOffset: e.HeaderOffset, Declined: true})
			}
		}
		if h != nil {
			h.Sum(e.SHA256[:0])
			e.HasDigest = true
		}
		entries.add(e)
	}
	if _, err := io.CopyBuffer(io.Discard, cr, buf); err != nil {
		return nil, nil, tarErr(cr.n, err)
	}
	ix.TarSize = cr.n
	ix.DiffID = opts.DiffID
	if stream != nil {
		ix.DiffID = digest.NewDigest(digest.SHA256, stream)
	}
	ix.Entries = entries.join()
	return ix, kept, nil
}

// chunks gathers entries in fixed blocks and joins them once at the end:
// a growing slice would copy itself every 25% and leave about four times
// the index in garbage on the way (a 500k-entry layer peaked at 380 MiB
// of RSS that way).
type chunks struct {
	full [][]Entry
	cur  []Entry
	n    int
}

const chunkLen = 4096

func (c *chunks) add(e Entry) {
	if len(c.cur) == cap(c.cur) {
		if c.cur != nil {
			c.full = append(c.full, c.cur)
		}
		// Blocks grow from 16 entries to chunkLen, so a small layer does
		// not pay for a 700 KiB block.
		c.cur = make([]Entry, 0, min(max(16, 2*cap(c.cur)), chunkLen))
	}
	c.cur = append(c.cur, e)
	c.n++
}

func (c *chunks) join() []Entry {
	if c.n == 0 {
		return nil
	}
	out := make([]Entry, 0, c.n)
	for i, ch := range c.full {
		out = append(out, ch...)
		c.full[i] = nil // each block is garbage as soon as it is copied
	}
	return append(out, c.cur...)
}

// drain reads the entry's data to its end, into h and keep when they are
// not nil.
func drain(tr *tar.Reader, h hash.Hash, keep io.Writer, buf []byte) error {
	var w io.Writer = io.Discard
	switch {
	case h != nil && keep != nil:
		w = io.MultiWriter(h, keep)
	case h != nil:
		w = h
	case keep != nil:
		w = keep
	}
	_, err := io.CopyBuffer(w, tr, buf)
	return err
}

// appender is a Write that appends to a slice.
type appender []byte

func (a *appender) Write(p []byte) (int, error) {
	*a = append(*a, p...)
	return len(p), nil
}

// entryOf is the index entry of one tar header, before its offsets.
func entryOf(hdr *tar.Header) (Entry, error) {
	p, err := cleanName(hdr.Name)
	if err != nil {
		return Entry{}, err
	}
	if hdr.Uid < 0 || hdr.Gid < 0 {
		return Entry{}, fmt.Errorf("%w: entry %.64q: negative uid or gid%.0w", ErrInvalidTar, p, errdefs.ErrInvalidArgument)
	}
	e := Entry{
		Path: p,
		// Only the permission bits come from the header's mode field: its
		// type bits (c_ISDIR…) may contradict the type flag, which decides.
		Mode:     hdr.FileInfo().Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky),
		UID:      int64(hdr.Uid),
		GID:      int64(hdr.Gid),
		ModTime:  hdr.ModTime.UTC(),
		Devmajor: hdr.Devmajor,
		Devminor: hdr.Devminor,
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeRegA, tar.TypeGNUSparse, tar.TypeCont:
		e.Type, e.Size = TypeFile, hdr.Size
		e.Sparse = safetar.Sparse(hdr)
	case tar.TypeDir:
		e.Type = TypeDir
	case tar.TypeSymlink:
		e.Type, e.Linkname, e.Size = TypeSymlink, hdr.Linkname, int64(len(hdr.Linkname))
	case tar.TypeLink:
		target, err := cleanName(hdr.Linkname)
		if err != nil {
			return Entry{}, fmt.Errorf("hardlink %.64q: %w", p, err)
		}
		e.Type, e.Linkname = TypeHardlink, target
	case tar.TypeChar:
		e.Type = TypeChar
	case tar.TypeBlock:
		e.Type = TypeBlock
	case tar.TypeFifo:
		e.Type = TypeFIFO
	default:
		// GNU volume labels, multi-volume continuations and vendor types:
		// dockerd's applier refuses them ("unhandled tar header type").
		return Entry{}, fmt.Errorf("%w: entry %.64q has tar type %q%.0w", ErrInvalidTar, p, hdr.Typeflag, errdefs.ErrInvalidArgument)
	}
	e.Mode |= typeBits[e.Type]
	if e.Type != TypeFile && e.Type != TypeSymlink {
		e.Size = 0
	}
	if e.Type != TypeChar && e.Type != TypeBlock {
		e.Devmajor, e.Devminor = 0, 0
	}
	if e.Devmajor < 0 || e.Devminor < 0 {
		return Entry{}, fmt.Errorf("%w: entry %.64q: negative device number%.0w", ErrInvalidTar, p, errdefs.ErrInvalidArgument)
	}
	if e.Size < 0 {
		return Entry{}, fmt.Errorf("%w: entry %.64q: negative size%.0w", ErrInvalidTar, p, errdefs.ErrInvalidArgument)
	}
	return e, nil
}

// tarErr places an error at its offset. What archive/tar refuses is the
// layer's fault (ErrInvalidTar); anything else is the reader's (a
// decompressor's cap, a digest mismatch, a cancelled request) and keeps
// its own class.
func tarErr(off int64, err error) error {
	if errors.Is(err, tar.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: at offset %d: %w%.0w", ErrInvalidTar, off, err, errdefs.ErrInvalidArgument)
	}
	return fmt.Errorf("layer tar at offset %d: %w", off, err)
}

// countingReader counts the bytes archive/tar consumed. It is not an
// io.Seeker, so archive/tar reads what it skips and every offset is exact.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
