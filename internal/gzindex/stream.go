package gzindex

import (
	"bufio"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"github.com/wharfproject/wharf/internal/gzindex/flate"
)

// stream decodes the gzip members of a blob, or of its tail from a
// checkpoint on, and tells at every point a decoder could start from:
// a member's header and every DEFLATE block boundary.
type stream struct {
	br  *bufio.Reader
	pos int64 // the blob's byte br reads next, when no member is open
	out int64 // the uncompressed offset of the next byte handed out

	fl      *flate.Reader // the open member's decoder, nil between members
	flStart int64         // the blob's byte fl started reading at
	flOut   int64         // the uncompressed offset fl started at
	crc     hash.Hash32   // the open member's CRC-32, nil if it was entered mid-way
	size    uint32        // the open member's size so far, mod 2³²

	members int // members whose header was read

	// boundary is told of every start point: bit is the offset in the
	// blob, b the decoder's state (nil for a member's header). An error
	// ends the stream; errStop ends it cleanly.
	boundary func(bit, out int64, b *flate.Boundary) error

	err error
}

// enter opens a member mid-way: at a block boundary, with its window.
func (s *stream) enter(c Checkpoint, window []byte) {
	s.flStart, s.flOut = c.Offset(), c.Out
	s.fl = flate.Config{Window: window, SkipBits: uint(c.In % 8), OnBlock: s.onBlock}.NewReader(s.br)
	s.crc = nil
	s.members = 1
}

func (s *stream) onBlock(b flate.Boundary) error {
	return s.boundary(s.flStart*8+b.Bit, s.flOut+b.Out, &b)
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
		s.out += int64(n)
		if s.crc != nil {
			s.crc.Write(p[:n])
			s.size += uint32(n)
		}
		switch {
		case err == io.EOF:
			s.err = s.endMember()
		case err == errStop:
			s.err = io.EOF
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
	s.crc, s.size = crc32.NewIEEE(), 0
	return nil
}

// endMember reads the trailer and checks it if the member was read whole.
func (s *stream) endMember() error {
	s.pos = s.flStart + s.fl.InputOffset()
	s.fl = nil
	crc, size, err := readTrailer(s.br)
	if err != nil {
		return fmt.Errorf("%w (the trailer at byte %d)", err, s.pos)
	}
	if s.crc != nil && (crc != s.crc.Sum32() || size != s.size) {
		return fmt.Errorf("%w: the member ending at byte %d fails its checksum or size", ErrCorrupt, s.pos+8)
	}
	s.pos += 8
	return nil
}
