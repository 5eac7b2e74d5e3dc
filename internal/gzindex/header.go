package gzindex

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// RFC 1952 member header flags.
const (
	flagHdrCrc  = 1 << 1
	flagExtra   = 1 << 2
	flagName    = 1 << 3
	flagComment = 1 << 4
)

// maxHeaderString caps a member's file name and comment: 64 KiB, far
// over any path a gzip tool writes (Linux PATH_MAX is 4 KiB), so that a
// header cannot make the reader scan without end for a NUL.
const maxHeaderString = 64 << 10

// readHeader reads one gzip member header from br and returns its
// length. It checks what compress/gzip checks: the magic, the method,
// the header CRC when there is one.
func readHeader(br *bufio.Reader) (int64, error) {
	var h [10]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return 0, noEOF(err)
	}
	if h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 {
		return 0, fmt.Errorf("%w: not a gzip member header", ErrCorrupt)
	}
	flg := h[3]
	crc := crc32.ChecksumIEEE(h[:])
	n := int64(len(h))
	if flg&flagExtra != 0 {
		var l [2]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return 0, noEOF(err)
		}
		crc = crc32.Update(crc, crc32.IEEETable, l[:])
		// The extra field is at most 65,535 bytes by its length's width.
		extra := make([]byte, binary.LittleEndian.Uint16(l[:]))
		if _, err := io.ReadFull(br, extra); err != nil {
			return 0, noEOF(err)
		}
		crc = crc32.Update(crc, crc32.IEEETable, extra)
		n += 2 + int64(len(extra))
	}
	for _, f := range []byte{flagName, flagComment} {
		if flg&f == 0 {
			continue
		}
		for i := 0; ; i++ {
			if i == maxHeaderString {
				return 0, fmt.Errorf("%w: a header string over %d bytes", ErrCorrupt, maxHeaderString)
			}
			c, err := br.ReadByte()
			if err != nil {
				return 0, noEOF(err)
			}
			crc = crc32.Update(crc, crc32.IEEETable, []byte{c})
			n++
			if c == 0 {
				break
			}
		}
	}
	if flg&flagHdrCrc != 0 {
		var c [2]byte
		if _, err := io.ReadFull(br, c[:]); err != nil {
			return 0, noEOF(err)
		}
		if binary.LittleEndian.Uint16(c[:]) != uint16(crc) {
			return 0, fmt.Errorf("%w: header checksum mismatch", ErrCorrupt)
		}
		n += 2
	}
	return n, nil
}

// readTrailer reads a member's CRC-32 and size (mod 2³²).
func readTrailer(br *bufio.Reader) (crc, size uint32, err error) {
	var t [8]byte
	if _, err := io.ReadFull(br, t[:]); err != nil {
		return 0, 0, noEOF(err)
	}
	return binary.LittleEndian.Uint32(t[:4]), binary.LittleEndian.Uint32(t[4:]), nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return fmt.Errorf("%w: %w", ErrCorrupt, io.ErrUnexpectedEOF)
	}
	if err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}
