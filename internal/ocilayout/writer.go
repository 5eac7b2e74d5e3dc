package ocilayout

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/ctxio"
)

// Writer writes an OCI layout into a tar stream: every entry a regular
// file (0644) or directory (0755) with one modification time, so the same
// content makes the same bytes.
type Writer struct {
	tw     *tar.Writer
	mtime  time.Time
	format tar.Format
}

// NewWriter writes to w, every entry dated mtime in format (tar's default
// when FormatUnknown).
func NewWriter(w io.Writer, mtime time.Time, format tar.Format) *Writer {
	return &Writer{tw: tar.NewWriter(w), mtime: mtime, format: format}
}

func (w *Writer) header(name string, typ byte, mode, size int64) error {
	return w.tw.WriteHeader(&tar.Header{Name: name, Typeflag: typ, Mode: mode, Size: size, ModTime: w.mtime, Format: w.format})
}

// Dir writes a directory entry (name ends in "/").
func (w *Writer) Dir(name string) error { return w.header(name, tar.TypeDir, 0o755, 0) }

// File writes b as the file name.
func (w *Writer) File(name string, b []byte) error {
	if err := w.header(name, tar.TypeReg, 0o644, int64(len(b))); err != nil {
		return err
	}
	_, err := w.tw.Write(b)
	return err
}

// JSON writes v, marshalled, as the file name.
func (w *Writer) JSON(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.File(name, b)
}

// Layout writes the oci-layout file.
func (w *Writer) Layout() error { return w.File(LayoutFile, LayoutBytes) }

// Index writes idx as index.json (a reader takes the layout as whole once
// it has it, so it goes last).
func (w *Writer) Index(idx ocispec.Index) error { return w.JSON(IndexFile, idx) }

// Blob writes size bytes of r as blob d. The header goes out first: an
// error after it (r short, long, failing, ctx done) leaves the tar
// broken, and the caller must stop writing it.
func (w *Writer) Blob(ctx context.Context, d digest.Digest, size int64, r io.Reader) error {
	if err := w.header(BlobPath(d), tar.TypeReg, 0o644, size); err != nil {
		return err
	}
	n, err := ctxio.Copy(ctx, w.tw, io.LimitReader(r, size+1))
	if err == nil && n != size {
		err = fmt.Errorf("blob %s: %d bytes, not %d", d, n, size)
	}
	return err
}

// Close writes the tar's end.
func (w *Writer) Close() error { return w.tw.Close() }
