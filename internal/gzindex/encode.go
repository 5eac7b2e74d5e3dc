package gzindex

import (
	"encoding/binary"
	"hash/crc32"
)

// The encoding, all integers uvarints unless said:
//
//	"WGZI" 1                      magic and version
//	span csize usize count flags  flags bit 0: Capped
//	count × checkpoint:
//	  Δin Δout kind               kind 0: a block (a window follows), 1: a header
//	  crc(4, LE) windowLen windowCRC(4, LE) encLen window
//	crc(4, LE)                    CRC-32 of all before it
var magic = []byte("WGZI\x01")

const (
	kindBlock  = 0
	kindHeader = 1

	// MaxEncodedSize caps an encoded index: the windows' cap and, per
	// checkpoint, at most 45 bytes of numbers (five uvarints of ≤ 9 bytes
	// each; offsets are < 2⁶³), a kind and two CRCs. The store reads no
	// more.
	MaxEncodedSize = MaxWindowBytes + MaxCheckpoints*(5*9+1+2*4) + 64

	// minEncodedCheckpoint is the fewest bytes a checkpoint takes (a
	// header: two uvarints and the kind), which bounds the count a
	// buffer can hold before anything is allocated.
	minEncodedCheckpoint = 3
)

// MarshalBinary encodes the index (valid or not: Unmarshal checks).
func (ix *Index) MarshalBinary() ([]byte, error) {
	b := append([]byte(nil), magic...)
	var flags uint64
	if ix.Capped {
		flags |= 1
	}
	b = binary.AppendUvarint(b, uint64(ix.Span))
	b = binary.AppendUvarint(b, uint64(ix.CompressedSize))
	b = binary.AppendUvarint(b, uint64(ix.UncompressedSize))
	b = binary.AppendUvarint(b, uint64(len(ix.Checkpoints)))
	b = binary.AppendUvarint(b, flags)
	var in, out int64
	for _, c := range ix.Checkpoints {
		b = binary.AppendUvarint(b, uint64(c.In-in))
		b = binary.AppendUvarint(b, uint64(c.Out-out))
		in, out = c.In, c.Out
		if c.Header {
			b = append(b, kindHeader)
			continue
		}
		b = append(b, kindBlock)
		b = binary.LittleEndian.AppendUint32(b, c.CRC)
		b = binary.AppendUvarint(b, uint64(c.WindowLen))
		b = binary.LittleEndian.AppendUint32(b, c.WindowCRC)
		b = binary.AppendUvarint(b, uint64(len(c.Window)))
		b = append(b, c.Window...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b)), nil
}

// Unmarshal decodes and validates an encoded index; anything else is
// ErrInvalidIndex. The windows alias b.
func Unmarshal(b []byte) (*Index, error) {
	switch {
	case len(b) > MaxEncodedSize:
		return nil, invalid("%d bytes (cap %d)", len(b), MaxEncodedSize)
	case len(b) < len(magic)+4 || string(b[:len(magic)]) != string(magic):
		return nil, invalid("not an index (magic or version)")
	}
	body := b[:len(b)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, invalid("checksum mismatch")
	}
	d := decoder{b: body[len(magic):]}
	ix := &Index{Span: d.int(), CompressedSize: d.int(), UncompressedSize: d.int()}
	count, flags := d.int(), d.int()
	if d.err != nil {
		return nil, d.err
	}
	if count > MaxCheckpoints || count > int64(len(d.b)/minEncodedCheckpoint) {
		return nil, invalid("%d checkpoints in %d bytes (cap %d)", count, len(d.b), MaxCheckpoints)
	}
	ix.Capped = flags&1 != 0
	ix.Checkpoints = make([]Checkpoint, 0, count)
	var in, out int64
	for i := int64(0); i < count && d.err == nil; i++ {
		dIn, dOut := d.int(), d.int()
		if dIn > 1<<62-in || dOut > 1<<62-out {
			return nil, invalid("checkpoint %d's offsets overflow", i)
		}
		in, out = in+dIn, out+dOut
		c := Checkpoint{In: in, Out: out}
		switch d.byte() {
		case kindHeader:
			c.Header = true
		case kindBlock:
			c.CRC = d.uint32()
			c.WindowLen = int(min(d.int(), 1<<31))
			c.WindowCRC = d.uint32()
			c.Window = d.bytes(d.int())
		default:
			return nil, invalid("checkpoint %d has an unknown kind", i)
		}
		ix.Checkpoints = append(ix.Checkpoints, c)
	}
	if d.err == nil && len(d.b) != 0 {
		return nil, invalid("%d bytes after the checkpoints", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	if err := ix.Validate(); err != nil {
		return nil, err
	}
	return ix, nil
}

// decoder reads the encoding; its first error sticks and every later
// read yields zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = invalid("truncated or malformed")
	}
	d.b = nil
}

// int reads a uvarint of at most 2⁶², so that sums of two cannot
// overflow.
func (d *decoder) int() int64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > 1<<62 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return int64(v)
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0xff
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uint32() uint32 {
	if len(d.b) < 4 {
		d.fail()
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) bytes(n int64) []byte {
	if n < 0 || n > int64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
