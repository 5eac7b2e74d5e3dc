package gzindex

import (
	"bytes"
	stdflate "compress/flate"
	"hash/crc32"
	"io"

	"github.com/wharfproject/wharf/internal/gzindex/flate"
)

func crc(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

// windowCodec compresses windows with one reused writer (a writer costs
// about 1 MiB to set up).
type windowCodec struct {
	w   *stdflate.Writer
	buf bytes.Buffer
}

func (c *windowCodec) encode(win []byte) ([]byte, error) {
	c.buf.Reset()
	if c.w == nil {
		// Level 1: on 32 KiB of Go source it takes 0.32 ms where level 9
		// takes 0.96 ms (0.05 against 0.28 ms on random bytes), for
		// windows 16 % larger (13.1 against 11.3 KiB); a layer's pass
		// compresses one window per span, 100 for 200 MiB.
		w, err := stdflate.NewWriter(&c.buf, stdflate.BestSpeed)
		if err != nil {
			return nil, err
		}
		c.w = w
	} else {
		c.w.Reset(&c.buf)
	}
	if _, err := c.w.Write(win); err != nil {
		return nil, err
	}
	if err := c.w.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(c.buf.Bytes()), nil
}

// window decodes checkpoint i's window and checks its length and CRC.
func (ix *Index) window(i int) ([]byte, error) {
	c := ix.Checkpoints[i]
	if c.Header {
		return nil, nil
	}
	win := make([]byte, 0, c.WindowLen)
	// One byte over the length shows a window that decodes too long.
	buf := bytes.NewBuffer(win)
	_, err := io.Copy(buf, io.LimitReader(flate.NewReader(bytes.NewReader(c.Window)), int64(c.WindowLen)+1))
	switch {
	case err != nil:
		return nil, invalid("checkpoint %d's window does not decode: %v", i, err)
	case buf.Len() != c.WindowLen || crc(buf.Bytes()) != c.WindowCRC:
		return nil, invalid("checkpoint %d's window is not the %d bytes its checksum names", i, c.WindowLen)
	}
	return buf.Bytes(), nil
}
