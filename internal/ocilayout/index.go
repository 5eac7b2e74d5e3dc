package ocilayout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// indexHead and indexTail frame the entries of index.json as json.Marshal
// of an ocispec.Index writes them (the fields after manifests are empty).
var indexHead, indexTail = func() ([]byte, []byte) {
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}}
	idx.SchemaVersion = 2
	b, err := json.Marshal(idx)
	if err != nil || !bytes.HasSuffix(b, []byte("[]}")) {
		panic(fmt.Sprintf("ocilayout: index.json frame: %s %v", b, err))
	}
	return b[:len(b)-2], []byte("]}")
}()

// IndexWriter writes index.json an entry at a time: the same bytes
// json.Marshal of the whole ocispec.Index gives, without holding it
// (50,000 tagged images: a 15 MB file, and about three times that on the
// heap when built whole).
type IndexWriter struct {
	w     io.Writer
	first bool
}

// NewIndexWriter writes the index's head to w.
func NewIndexWriter(w io.Writer) (*IndexWriter, error) {
	if _, err := w.Write(indexHead); err != nil {
		return nil, err
	}
	return &IndexWriter{w: w, first: true}, nil
}

// Add writes one entry.
func (iw *IndexWriter) Add(d ocispec.Descriptor) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if !iw.first {
		if _, err := iw.w.Write([]byte{','}); err != nil {
			return err
		}
	}
	iw.first = false
	_, err = iw.w.Write(b)
	return err
}

// Close writes the index's tail.
func (iw *IndexWriter) Close() error {
	_, err := iw.w.Write(indexTail)
	return err
}
