// Package safetar is the one rule for the tar streams clients send wharfd
// (docker load's archive, sync's OCI-layout archive import): an entry's
// data comes from the archive's own bytes, never from the reader's
// imagination.
//
// archive/tar expands sparse files (the old GNU 'S' type and the PAX
// GNU.sparse.* records, formats 0.0, 0.1 and 1.0) transparently: a 10 KiB
// archive can declare a 512 MiB file whose holes the reader returns as
// zeros, and a caller that writes an entry before verifying it (a blob
// hashed against its name) writes all of it first. No image archive needs
// a sparse entry (docker save, skopeo, oras and wharf never write one), so
// they are refused by Next, and — so that no later format slips through
// the same way — Read refuses to return more entry data than the archive
// bytes consumed so far: the bytes written for a client are bounded by
// the bytes it sent.
package safetar

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/containerd/errdefs"
)

var (
	// ErrSparse is a sparse entry (GNU 'S' type or PAX GNU.sparse.*).
	ErrSparse = errors.New("sparse tar entries are not accepted")
	// ErrExpanded is entry data beyond the archive bytes read.
	ErrExpanded = errors.New("tar entry data exceeds the archive bytes read")
)

// Reader is a tar.Reader under the rule above. Both errors it adds wrap
// errdefs.ErrInvalidArgument too (a 400 at the API).
type Reader struct {
	tr  *tar.Reader
	in  *counter
	out int64 // entry data returned by Read, every entry
}

// NewReader reads the tar stream r.
func NewReader(r io.Reader) *Reader {
	c := &counter{r: r}
	return &Reader{tr: tar.NewReader(c), in: c}
}

// Next advances to the next entry; a sparse one is an error.
func (r *Reader) Next() (*tar.Header, error) {
	hdr, err := r.tr.Next()
	if err != nil {
		return hdr, err
	}
	if Sparse(hdr) {
		return nil, fmt.Errorf("%w: entry %q is a sparse file%.0w", ErrSparse, hdr.Name, errdefs.ErrInvalidArgument)
	}
	return hdr, nil
}

// Read reads the current entry's data. Once the data returned exceeds the
// archive bytes consumed (headers included), it returns nothing more
// and ErrExpanded: the bytes of that call are not handed on either.
func (r *Reader) Read(p []byte) (int, error) {
	n, err := r.tr.Read(p)
	r.out += int64(n)
	if r.out > r.in.n {
		return 0, fmt.Errorf("%w: %d bytes of entry data from %d bytes of archive%.0w", ErrExpanded, r.out, r.in.n, errdefs.ErrInvalidArgument)
	}
	return n, err
}

// Sparse reports whether hdr is a sparse entry, in any of the formats
// archive/tar expands.
func Sparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// counter counts the archive bytes archive/tar consumed. It is not an
// io.Seeker, so tar skips an entry by reading it, and every skipped byte
// is counted as consumed.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
