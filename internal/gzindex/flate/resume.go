package flate

import (
	"errors"
	"io"
)

// WindowSize is the history a DEFLATE decoder keeps: the farthest a match
// may reach back (RFC 1951 §3.2.5).
const WindowSize = 1 << 15

const maxMatchOffset = WindowSize // upstream's name, in deflate.go

// ErrSkipBits is returned by [Config.NewReader] for a SkipBits over 7.
var ErrSkipBits = errors.New("flate: a resume point skips 0 to 7 bits of its first byte")

// Boundary is the decoder's state between two blocks, handed to
// [Config.OnBlock] before the next block's header is read. It is valid
// only during the call.
type Boundary struct {
	// Bit is where the next block's header starts, in bits from the start
	// of the reader's input (the skipped bits of a resumed reader count).
	Bit int64
	// Out is the bytes decoded so far (a preset window not counted).
	Out int64

	d *decompressor
}

// AppendWindow appends the history a decoder resuming here needs, oldest
// byte first, to dst: the last [WindowSize] bytes of output, fewer near
// the start, with a preset window counted as output.
func (b Boundary) AppendWindow(dst []byte) []byte { return b.d.dict.appendWindow(dst) }

// Config sets up a decompressor; the zero value is [NewReader].
type Config struct {
	// Window is the history before the first block: the output a resumed
	// stream had already produced (its last WindowSize bytes are kept).
	Window []byte
	// SkipBits is how many low bits of the first input byte belong to the
	// block before the resume point (0 to 7).
	SkipBits uint
	// OnBlock is called at every block boundary but the end of the final
	// block, first before the first block. An error it returns ends the
	// stream: Read hands out what was decoded, then that error.
	OnBlock func(Boundary) error
}

// Reader is a DEFLATE decompressor.
type Reader struct{ f decompressor }

// NewReader returns a decompressor of r set up as c says. If r is not a
// [ByteReader] it is buffered, and more than the stream may be read.
func (c Config) NewReader(r io.Reader) *Reader {
	fixedHuffmanDecoderInit()
	z := new(Reader)
	f := &z.f
	f.makeReader(r)
	f.bits = new([maxNumLit + maxNumDist]int)
	f.codebits = new([numCodes]int)
	f.step = (*decompressor).nextBlock
	f.onBlock = c.OnBlock
	switch {
	case c.SkipBits > 7:
		f.err = ErrSkipBits
	case c.SkipBits > 0:
		f.skip = c.SkipBits
		f.step = (*decompressor).skipBits
	}
	f.dict.init(maxMatchOffset, c.Window)
	return z
}

// skipBits loads the first byte and drops the bits of the block before
// the resume point, then decodes as usual.
func (f *decompressor) skipBits() {
	if f.err = f.moreBits(); f.err != nil {
		return
	}
	f.b >>= f.skip
	f.nb -= f.skip
	f.step = (*decompressor).nextBlock
	f.nextBlock()
}

// Read decompresses into p.
func (z *Reader) Read(p []byte) (int, error) { return z.f.Read(p) }

// Close reports the error that ended the stream, if it was not io.EOF.
func (z *Reader) Close() error { return z.f.Close() }

// InputOffset is the input bytes consumed so far.
func (z *Reader) InputOffset() int64 { return z.f.roffset }

// Out is the bytes decoded so far, handed out or not.
func (z *Reader) Out() int64 { return z.f.dict.written() }
