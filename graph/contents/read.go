package contents

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/internal/decompress"
	"github.com/wharfproject/wharf/internal/layerindex"
	"github.com/wharfproject/wharf/internal/layertoc"
)

// ErrContentMismatch is a file whose bytes do not hash to the digest its
// index recorded.
var ErrContentMismatch = fmt.Errorf("file content does not match its digest%.0w", errdefs.ErrDataLoss)

// ErrDeclined is a read, for an image that wants some files, of a file an
// index pass read whole for that same Want and its Keep dropped (an
// executable that is no Go binary): the caller's own look at the bytes
// would come to the same, so they are not read again.
var ErrDeclined = errors.New("the file was read and declined by what the image wants")

const (
	// maxHeldFile is the largest file whose bytes are held in memory until
	// their digest is checked: 16 MiB. A larger one is spooled to a temp
	// file beside the indexes, so that no unverified byte is handed out
	// and memory stays bounded whatever the file's size.
	maxHeldFile = 16 << 20
	// maxCursorSkip is how far ahead a read of the next file of one layer
	// decodes and drops bytes rather than start a new range: 8 MiB, two
	// checkpoint spans, about what a new range would decode anyway.
	maxCursorSkip = 8 << 20
)

// writeContent writes the bytes of the file loc holds (Item.Bytes: the
// target of a hardlink) of the view v to w, checked against the file's
// digest when the index knows it. cur, when not nil, keeps one open read
// per layer that the next file of the layer continues (an archive walks
// many).
func (r *Room) writeContent(ctx context.Context, img *Image, v *layerindex.View, loc layerindex.Located, w io.Writer, cur *cursors) error {
	e := &loc.Entry
	if e.Type != layerindex.TypeFile {
		return fmt.Errorf("%s is a %s, not a file%.0w", e.Path, e.Type, errdefs.ErrInvalidArgument)
	}
	merged := v.Layers()
	if loc.LayerIndex < 0 || loc.LayerIndex >= len(img.Layers) || loc.LayerIndex >= len(merged) {
		return fmt.Errorf("%s: no layer %d%.0w", e.Path, loc.LayerIndex, errdefs.ErrInternal)
	}
	desc := img.Layers[loc.LayerIndex]
	// The entry's place is in the index the view was merged from, which
	// need not be the one kept for the digest now: once the layer is
	// local (a pull), a TOC's index is replaced by the layer's own, while
	// a view merged before keeps the TOC's entries.
	if merged[loc.LayerIndex].Source.FromTOC() {
		t, err := r.toc(ctx, img.Blobs, desc)
		if err != nil {
			return err
		}
		te, err := t.entry(e.Path)
		if err != nil {
			return err
		}
		return layertoc.ReadFile(ctx, rangeOf(img.Blobs, desc), t.src, te, w)
	}
	ld, err := r.layer(ctx, img, loc.LayerIndex)
	if err != nil {
		return err
	}
	if ld.ix.Source.FromTOC() {
		// Never replaced this way round: a layer's own index is kept
		// over a TOC's.
		return fmt.Errorf("%s: the layer's index is a TOC's, the view's is not%.0w", e.Path, errdefs.ErrInternal)
	}
	if e.Sparse {
		// The holes are in the headers: read them again from the first
		// header block to the next entry's.
		end := nextHeader(ld.ix, e)
		rc, err := r.openAt(ctx, img, ld, loc.LayerIndex, e.HeaderOffset, end-e.HeaderOffset, cur)
		if err != nil {
			return err
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		if _, err := tr.Next(); err != nil {
			return fmt.Errorf("%s: sparse headers: %w", e.Path, err)
		}
		return r.copyVerified(w, tr, e)
	}
	key := fileKey{desc.Digest, e.HeaderOffset}
	if b, ok := r.files.get(key); ok && int64(len(b)) == e.Size {
		if err := checkContent(b, e); err != nil {
			return err
		}
		_, err := w.Write(b)
		return err
	}
	if _, ok := r.declined.get(declinedKey{key, img.Want}); ok && img.Want != nil {
		return fmt.Errorf("%s: %w", e.Path, ErrDeclined)
	}
	off, n, ok := e.DataRange()
	if !ok {
		return fmt.Errorf("%s: the index records no place for its bytes%.0w", e.Path, errdefs.ErrNotImplemented)
	}
	rc, err := r.openAt(ctx, img, ld, loc.LayerIndex, off, n, cur)
	if err != nil {
		return err
	}
	defer rc.Close()
	if cur != nil || !e.HasDigest || e.Size > maxHeldFile {
		return r.copyVerified(w, rc, e)
	}
	// One file read on its own (cat, a package database): its verified
	// bytes are kept for the next read of it. An archive's many files
	// (cur) would only churn them.
	b, err := readVerified(rc, e)
	if err != nil {
		return err
	}
	r.files.add(key, b, e.Size)
	_, err = w.Write(b)
	return err
}

// declinedKey is a file declined by one Want (by identity: package lists
// share packages.Wanted).
type declinedKey struct {
	file fileKey
	want *Want
}

// fileKey names a file's bytes in a layer: its first header's offset in
// the layer's tar stream. The bytes are the same whichever image or view
// names the layer, and are checked against the reading entry's digest.
type fileKey struct {
	layer  digest.Digest
	header int64
}

// nextHeader is where the entry after e starts in the tar stream (the
// end-of-archive blocks when it is the last). Entries are in tar order,
// their header offsets growing (Decode refuses others), so a binary
// search finds it: a layer of many sparse files costs O(log n) each.
func nextHeader(ix *layerindex.Index, e *layerindex.Entry) int64 {
	i := sort.Search(len(ix.Entries), func(i int) bool { return ix.Entries[i].HeaderOffset > e.HeaderOffset })
	end := ix.TarSize
	if i < len(ix.Entries) && ix.Entries[i].HeaderOffset < end {
		end = ix.Entries[i].HeaderOffset
	}
	if end < e.HeaderOffset {
		end = e.HeaderOffset
	}
	return end
}

// copyVerified copies e.Size bytes of r to w. With a known digest, w gets
// them only after they hashed right: held in memory up to maxHeldFile,
// spooled to a temp file above.
func (r *Room) copyVerified(w io.Writer, src io.Reader, e *layerindex.Entry) error {
	if !e.HasDigest {
		n, err := io.CopyN(w, src, e.Size)
		if err != nil {
			return fmt.Errorf("%s: read %d of %d bytes: %w", e.Path, n, e.Size, err)
		}
		return nil
	}
	if e.Size <= maxHeldFile {
		b, err := readVerified(src, e)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	f, err := os.CreateTemp(r.tmp, spoolPattern)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyN(io.MultiWriter(f, h), src, e.Size)
	if err != nil {
		return fmt.Errorf("%s: read %d of %d bytes: %w", e.Path, n, e.Size, err)
	}
	if !bytes.Equal(h.Sum(nil), e.SHA256[:]) {
		return fmt.Errorf("%w: %s", ErrContentMismatch, e.Path)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = io.Copy(w, f)
	return err
}

// readVerified reads the e.Size bytes of a file of known digest, at most
// maxHeldFile, into memory and checks them.
func readVerified(src io.Reader, e *layerindex.Entry) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, e.Size))
	if n, err := io.CopyN(buf, src, e.Size); err != nil {
		return nil, fmt.Errorf("%s: read %d of %d bytes: %w", e.Path, n, e.Size, err)
	}
	if err := checkContent(buf.Bytes(), e); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkContent checks b against the digest e's index recorded.
func checkContent(b []byte, e *layerindex.Entry) error {
	if sum := sha256.Sum256(b); !bytes.Equal(sum[:], e.SHA256[:]) {
		return fmt.Errorf("%w: %s", ErrContentMismatch, e.Path)
	}
	return nil
}

// spoolPattern names the temp files of copyVerified; New removes those a
// crash left.
const spoolPattern = "read-*"

// cursors are the open reads of an archive of a directory, one per
// layer. A read opened for one file runs to where the layer's last entry
// under the directory ends, so that the next files continue it: one
// range per layer for a tree written in tar order, and no more than the
// tree asks of a registry.
type cursors struct {
	dir  string          // the archived directory, as the layers name it
	open map[int]*cursor // by layer
	ends map[int]int64   // by layer: where its entries under dir end
}

type cursor struct {
	rc  io.ReadCloser
	pos int64 // the uncompressed offset rc is at
}

func newCursors(dir string) *cursors {
	return &cursors{dir: dir, open: map[int]*cursor{}, ends: map[int]int64{}}
}

func (c *cursors) Close() {
	for _, cu := range c.open {
		cu.rc.Close()
	}
}

// end is where layer i's last entry under the directory ends in its tar
// stream: the next entry's header, or the end-of-archive blocks.
func (c *cursors) end(i int, ix *layerindex.Index) int64 {
	if e, ok := c.ends[i]; ok {
		return e
	}
	var end int64
	for k := range ix.Entries {
		p := ix.Entries[k].Path
		if c.dir != "/" && p != c.dir && !strings.HasPrefix(p, c.dir+"/") {
			continue
		}
		end = ix.TarSize
		if k+1 < len(ix.Entries) {
			end = ix.Entries[k+1].HeaderOffset
		}
	}
	c.ends[i] = end
	return end
}

// openAt reads uncompressed [off, off+n) of layer i: with cur, continuing
// the layer's open read when off is a little ahead of it, else a new read
// from off to the layer's end that the next files continue.
func (r *Room) openAt(ctx context.Context, img *Image, ld *layerData, i int, off, n int64, cur *cursors) (io.ReadCloser, error) {
	if cur == nil {
		return r.rawRange(ctx, img, ld, i, off, n)
	}
	cu := cur.open[i]
	if cu != nil && (off < cu.pos || off-cu.pos > maxCursorSkip) {
		cu.rc.Close()
		delete(cur.open, i)
		cu = nil
	}
	if cu == nil {
		// A hardlink's bytes may lie outside the directory: then the
		// read is the file's alone.
		end := cur.end(i, ld.ix)
		if end < off+n {
			end = off + n
		}
		rc, err := r.rawRange(ctx, img, ld, i, off, end-off)
		if err != nil {
			return nil, err
		}
		cu = &cursor{rc: rc, pos: off}
		cur.open[i] = cu
	}
	if skip := off - cu.pos; skip > 0 {
		if _, err := io.CopyN(io.Discard, cu.rc, skip); err != nil {
			return nil, err
		}
		cu.pos = off
	}
	return io.NopCloser(&cursorReader{cu: cu, left: n}), nil
}

type cursorReader struct {
	cu   *cursor
	left int64
}

func (c *cursorReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.cu.rc.Read(p)
	c.cu.pos += int64(n)
	c.left -= int64(n)
	return n, err
}

// rawRange reads uncompressed [off, off+n) of layer i: through the gzip
// checkpoints (one range request of about one span), straight from a
// plain tar layer (its digest is its diff ID), or else by decompressing
// the layer from its start.
func (r *Room) rawRange(ctx context.Context, img *Image, ld *layerData, i int, off, n int64) (io.ReadCloser, error) {
	desc := img.Layers[i]
	switch {
	case ld.gz != nil:
		return ld.gz.ReadAt(ctx, rangeOf(img.Blobs, desc), off, n)
	case ld.ix.DiffID != "" && ld.ix.DiffID == desc.Digest:
		return img.Blobs.ReadRange(ctx, desc, off, n)
	}
	rc, err := img.Blobs.Open(ctx, desc)
	if err != nil {
		return nil, err
	}
	dr, closeDec, err := decompressed(rc)
	if err != nil {
		rc.Close()
		return nil, err
	}
	if _, err := io.CopyN(io.Discard, dr, off); err != nil {
		closeDec()
		rc.Close()
		return nil, err
	}
	return &readCloser{Reader: io.LimitReader(dr, n), close: func() error { closeDec(); return rc.Close() }}, nil
}

// decompressed is the tar stream of the layer blob r, told by its first
// bytes, under the bomb caps.
func decompressed(r io.Reader) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4)
	in := decompress.NewCounter(br)
	var bomb decompress.Limit
	switch formatOf(head) {
	case formatGzip:
		zr, err := decompress.Gzip(in, bomb)
		return zr, func() {}, err
	case formatZstd:
		zr, err := newZstd(in)
		if err != nil {
			return nil, nil, err
		}
		return bomb.Guard(in, zr), zr.Close, nil
	}
	return in, func() {}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r *readCloser) Close() error { return r.close() }
