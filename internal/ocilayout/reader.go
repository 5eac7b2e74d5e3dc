package ocilayout

import (
	"archive/tar"
	"io"

	"github.com/wharfproject/wharf/internal/safetar"
)

// Reader reads the entries of a layout tar (docker save's, the sync
// export's, skopeo's or oras's) through safetar: a sparse entry is
// refused (safetar.ErrSparse), and no entry yields more bytes than the
// archive bytes read, so what a reader stages is bounded by what it was
// sent. Which entries it takes, and where it puts them, is the caller's.
type Reader struct{ tr *safetar.Reader }

// NewReader reads the tar stream r.
func NewReader(r io.Reader) *Reader { return &Reader{tr: safetar.NewReader(r)} }

// Next is the next entry's header (io.EOF after the last).
func (r *Reader) Next() (*tar.Header, error) { return r.tr.Next() }

// Read reads the current entry's bytes.
func (r *Reader) Read(p []byte) (int, error) { return r.tr.Read(p) }
