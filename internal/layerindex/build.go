package layerindex

import (
	"archive/tar"
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
	lim = lim.orDefault()
	stream := sha256.New()
	cr := &countingReader{r: io.TeeReader(r, stream)}
	tr := tar.NewReader(cr)
	b := budget{lim: lim}
	ix := &Index{Source: SourceLayer}
	var entries chunks
	buf := make([]byte, copyBuffer)
	content := sha256.New()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The previous entry was read to its end, so the next header starts
		// at the next 512-byte block.
		start := (cr.n + 511) &^ 511
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, tarErr(start, err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			// A PAX global header sets defaults archive/tar has already
			// applied to the entries after it; it is no file.
			if _, err := io.CopyBuffer(io.Discard, tr, buf); err != nil {
				return nil, tarErr(start, err)
			}
			continue
		}
		e, err := entryOf(hdr)
		if err != nil {
			return nil, err
		}
		e.HeaderOffset, e.DataOffset = start, cr.n
		if err := b.add(&e); err != nil {
			return nil, err
		}
		var h hash.Hash
		if e.Type == TypeFile {
			content.Reset()
			h = content
		}
		if err := drain(tr, h, buf); err != nil {
			return nil, tarErr(start, err)
		}
		if h != nil {
			h.Sum(e.SHA256[:0])
			e.HasDigest = true
		}
		entries.add(e)
	}
	if _, err := io.CopyBuffer(io.Discard, cr, buf); err != nil {
		return nil, tarErr(cr.n, err)
	}
	ix.TarSize = cr.n
	ix.DiffID = digest.NewDigest(digest.SHA256, stream)
	ix.Entries = entries.join()
	return ix, nil
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

// drain reads the entry's data to its end, into h when h is not nil.
func drain(tr *tar.Reader, h hash.Hash, buf []byte) error {
	var w io.Writer = io.Discard
	if h != nil {
		w = h
	}
	_, err := io.CopyBuffer(w, tr, buf)
	return err
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
