package indexcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/internal/gzindex"
	"github.com/wharfproject/wharf/internal/layerindex"
)

// The file of one layer:
//
//	magic    "wlidx01\n"                    8 bytes
//	liLen    uint64 big endian              the layerindex encoding's length
//	gzLen    uint64 big endian              the gzindex encoding's length (0: none)
//	li       layerindex.Encode's bytes
//	gz       gzindex.MarshalBinary's bytes
//	crc      uint32 big endian              CRC-32C of everything before it
//
// The layer index carries its own checksum and gzindex.Unmarshal validates
// its encoding; the trailing CRC catches a torn or foreign file before
// either decoder is asked.
var magic = [8]byte{'w', 'l', 'i', 'd', 'x', '0', '1', '\n'}

const headerSize = 8 + 8 + 8

// ErrCorrupt is a cache file that does not decode: it is removed and the
// index built again.
var ErrCorrupt = fmt.Errorf("corrupt layer index cache file%.0w", errdefs.ErrDataLoss)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Entry is what the cache keeps of one layer.
type Entry struct {
	// Index is the layer's index; its Layer is the key.
	Index *layerindex.Index
	// Gzip holds the decompressor checkpoints of a gzip layer read whole;
	// nil for any other layer.
	Gzip *gzindex.Index
}

// maxFileSize caps a cache file as read: the layer index's cap plus the
// gzip index's (gzindex.MaxEncodedSize), and the framing. A larger file is
// not one this package wrote.
func maxFileSize(lim layerindex.Limits) int64 {
	li := lim.MaxIndexBytes
	if li <= 0 {
		li = layerindex.DefaultLimits.MaxIndexBytes
	}
	return headerSize + li + gzindex.MaxEncodedSize + 4
}

// encode writes e in the format above.
func encode(e *Entry) ([]byte, error) {
	var li bytes.Buffer
	if err := layerindex.Encode(&li, e.Index); err != nil {
		return nil, err
	}
	var gz []byte
	if e.Gzip != nil {
		var err error
		if gz, err = e.Gzip.MarshalBinary(); err != nil {
			return nil, err
		}
	}
	out := make([]byte, 0, headerSize+li.Len()+len(gz)+4)
	out = append(out, magic[:]...)
	out = binary.BigEndian.AppendUint64(out, uint64(li.Len()))
	out = binary.BigEndian.AppendUint64(out, uint64(len(gz)))
	out = append(out, li.Bytes()...)
	out = append(out, gz...)
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli)), nil
}

// decode reads a file written by encode, at most maxFileSize bytes of it.
func decode(r io.Reader, lim layerindex.Limits) (*Entry, error) {
	max := maxFileSize(lim)
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: over %d bytes", ErrCorrupt, max)
	}
	return decodeBytes(b, lim)
}

func decodeBytes(b []byte, lim layerindex.Limits) (*Entry, error) {
	if len(b) < headerSize+4 || !bytes.Equal(b[:8], magic[:]) {
		return nil, fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	liLen, gzLen := binary.BigEndian.Uint64(b[8:16]), binary.BigEndian.Uint64(b[16:24])
	rest := uint64(len(body) - headerSize)
	if liLen > rest || gzLen > rest-liLen || liLen+gzLen != rest || gzLen > gzindex.MaxEncodedSize {
		return nil, fmt.Errorf("%w: lengths %d+%d do not frame %d bytes", ErrCorrupt, liLen, gzLen, rest)
	}
	ix, err := layerindex.Decode(bytes.NewReader(body[headerSize:headerSize+liLen]), lim)
	if err != nil {
		return nil, errors.Join(ErrCorrupt, err)
	}
	e := &Entry{Index: ix}
	if gzLen > 0 {
		gz, err := gzindex.Unmarshal(body[headerSize+liLen:])
		if err != nil {
			return nil, errors.Join(ErrCorrupt, err)
		}
		e.Gzip = gz
	}
	return e, nil
}
