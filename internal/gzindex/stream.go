package gzindex

import (
	"bufio"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/wharfproject/wharf/internal/gzindex/flate"
)

// stream decodes the gzip members of a blob, or of its tail from a
// checkpoint on, and tells at every point a decoder could start from:
// a member's header and every DEFLATE block boundary. It keeps the open
// member's CRC-32 from the member's start, also when entered mid-way
// (from the checkpoint's), so that every byte it hands out is checked by
// a trailer or by the checkpoint a span ends at.
type stream struct {
	br  *bufio.Reader
	pos int64 // the blob's byte br reads next, when no member is open
	out int64 // the uncompressed offset of the next byte handed out

	fl        *flate.Reader // the open member's decoder, nil between members
	flStart   int64         // the blob's byte fl started reading at
	flOut     int64         // the uncompressed offset fl started at
	crc       uint32        // the open member's CRC-32 up to out
	size      uint32        // the open member's size up to out, mod 2³²
	sizeKnown bool          // false in a member entered mid-way

	members int // members whose header was read

	// boundary is told of every start point: bit is the offset in the
	// blob, b the decoder's state (nil for a member's header). An error
	// ends the stream; errStop ends it cleanly, after stopped agrees.
	boundary func(bit, out int64, b *flate.Boundary) error
	stopped  func() error

	// marks wait for the member's CRC at uncompressed offsets not yet
	// handed out (a block boundary is seen before its bytes leave the
	// decoder), in order.
	marks []mark

	err error
}

type mark struct {
	out int64
	set func(crc uint32)
}

// enter opens a member mid-way: at a block boundary, with its window.
func (s *stream) enter(c Checkpoint, window []byte) {
	s.flStart, s.flOut = c.Offset(), c.Out
	s.fl = flate.Config{Window: window, SkipBits: uint(c.In % 8), OnBlock: s.onBlock}.NewReader(s.br)
	s.crc, s.sizeKnown = c.CRC, false
	s.members = 1
}

func (s *stream) onBlock(b flate.Boundary) error {
	return s.boundary(s.flStart*8+b.Bit, s.flOut+b.Out, &b)
}

// markCRC has set called with the open member's CRC-32 at out (≥ s.out).
func (s *stream) markCRC(out int64, set func(uint32)) {
	if out == s.out {
		set(s.crc)
		return
	}
	s.marks = append(s.marks, mark{out, set})
}

// handOut counts b, the bytes at s.out, into the member's CRC and size.
func (s *stream) handOut(b []byte) {
	for len(s.marks) > 0 && s.marks[0].out <= s.out+int64(len(b)) {
		k := s.marks[0].out - s.out
		s.crc = crc32.Update(s.crc, crc32.IEEETable, b[:k])
		s.size += uint32(k)
		s.out += k
		b = b[k:]
		s.marks[0].set(s.crc)
		s.marks = s.marks[1:]
	}
	s.crc = crc32.Update(s.crc, crc32.IEEETable, b)
	s.size += uint32(len(b))
	s.out += int64(len(b))
}

func (s *stream) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil // the loop below waits for a byte or an error
	}
	for {
		if s.err != nil {
			return 0, s.err
		}
		if s.fl == nil {
			s.err = s.nextMember()
			continue
		}
		n, err := s.fl.Read(p)
		s.handOut(p[:n])
		switch {
		case err == io.EOF:
			s.err = s.endMember()
		case err == errStop:
			s.err = io.EOF
			if s.stopped != nil {
				if err := s.stopped(); err != nil {
					s.err = err
				}
			}
		case err != nil:
			if _, ok := err.(flate.CorruptInputError); ok || err == io.ErrUnexpectedEOF {
				err = fmt.Errorf("%w: %w (counting from the blob's byte %d)", ErrCorrupt, err, s.flStart)
			}
			s.err = err
		}
		if n > 0 {
			return n, nil
		}
	}
}

// nextMember is at a member's start or at the blob's end.
func (s *stream) nextMember() error {
	if _, err := s.br.Peek(1); err == io.EOF && s.members > 0 {
		return io.EOF
	}
	if err := s.boundary(s.pos*8, s.out, nil); err != nil {
		if err == errStop {
			return io.EOF
		}
		return err
	}
	n, err := readHeader(s.br)
	if err != nil {
		return fmt.Errorf("%w (member at byte %d)", err, s.pos)
	}
	s.members++
	s.pos += n
	s.flStart, s.flOut = s.pos, s.out
	s.fl = flate.Config{OnBlock: s.onBlock}.NewReader(s.br)
	s.crc, s.size, s.sizeKnown = 0, 0, true
	return nil
}

// endMember reads the trailer and checks it.
func (s *stream) endMember() error {
	s.pos = s.flStart + s.fl.InputOffset()
	s.fl = nil
	crc, size, err := readTrailer(s.br)
	if err != nil {
		return fmt.Errorf("%w (the trailer at byte %d)", err, s.pos)
	}
	if crc != s.crc || s.sizeKnown && size != s.size {
		return fmt.Errorf("%w: the member ending at byte %d fails its checksum or size", ErrCorrupt, s.pos+8)
	}
	s.pos += 8
	return nil
}
