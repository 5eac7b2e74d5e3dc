// Package decompress opens what clients send compressed (gzip, bzip2; xz
// and zstd refused by name) under the decompression-bomb caps: a few KiB
// of gzip can expand to GiBs (zeros compress about 1000:1; bzip2 far
// more), and what is decompressed is written to disk or hashed, so each
// stream is capped at
//
//	slack + ratio × compressed bytes read so far
//
// with slack 8 GiB and ratio 128: a real layer (text and binaries compress
// 2–10×) passes at any size, a zero-filled file of up to 8 GiB passes, and
// a client can make wharfd write or hash at most 8 GiB + 128 bytes for each
// byte it sends. A Budget shares one such cap among the streams of one
// request. Memory is not at stake: callers read in bounded chunks.
package decompress

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"
	"math"

	"github.com/containerd/errdefs"
)

const (
	defaultSlack = 8 << 30
	defaultRatio = 128
)

// Limit is the cap above; the zero value means the defaults (tests lower
// the slack to build small bombs).
type Limit struct {
	Slack int64
	Ratio int64
}

// Max is the most bytes compressed bytes may decompress to: what Guard
// lets through once all of them are read (saturating, never negative).
// A caller that knows a blob's size up front can refuse what declares
// more (a tar entry's size) before inflating any of it.
func (l Limit) Max(compressed int64) int64 {
	l = l.OrDefault()
	if compressed < 0 {
		compressed = 0
	}
	if compressed > (math.MaxInt64-l.Slack)/l.Ratio {
		return math.MaxInt64
	}
	return l.Slack + l.Ratio*compressed
}

// OrDefault fills the zero fields with the defaults.
func (l Limit) OrDefault() Limit {
	if l.Slack <= 0 {
		l.Slack = defaultSlack
	}
	if l.Ratio <= 0 {
		l.Ratio = defaultRatio
	}
	return l
}

// Counter counts the bytes read through it: the compressed side of a cap.
type Counter struct {
	r io.Reader
	n int64
}

// NewCounter counts what is read of r.
func NewCounter(r io.Reader) *Counter { return &Counter{r: r} }

// N is the bytes read so far.
func (c *Counter) N() int64 { return c.n }

func (c *Counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Guard wraps the decompressor out, which reads the compressed stream
// through in.
func (l Limit) Guard(in *Counter, out io.Reader) io.Reader {
	return &guard{in: in, out: out, lim: l.OrDefault()}
}

type guard struct {
	in  *Counter
	out io.Reader
	n   int64
	lim Limit
}

func (g *guard) Read(p []byte) (int, error) {
	n, err := g.out.Read(p)
	g.n += int64(n)
	if max := g.lim.Slack + g.lim.Ratio*g.in.n; g.n > max {
		return n, fmt.Errorf("decompressed data exceeds %d bytes for %d compressed bytes (limit: %d bytes + %d× the compressed size): refusing a decompression bomb%.0w",
			g.n, g.in.n, g.lim.Slack, g.lim.Ratio, errdefs.ErrInvalidArgument)
	}
	return n, err
}

// Budget is one cap shared by every decompression of one request (the
// DiffIDs of a load): slack + ratio × the bytes the client sent in all,
// so that naming many (or the same) bomb layers buys no more work than
// one archive of that size may cost.
type Budget struct {
	in  *Counter // the request body
	lim Limit
	n   int64
}

// NewBudget caps by the bytes read through in (the request body).
func NewBudget(in *Counter, l Limit) *Budget { return &Budget{in: in, lim: l.OrDefault()} }

// Guard counts out against the budget.
func (b *Budget) Guard(out io.Reader) io.Reader { return &budgetReader{b: b, r: out} }

type budgetReader struct {
	b *Budget
	r io.Reader
}

func (br *budgetReader) Read(p []byte) (int, error) {
	n, err := br.r.Read(p)
	b := br.b
	b.n += int64(n)
	if max := b.lim.Slack + b.lim.Ratio*b.in.n; b.n > max {
		return n, fmt.Errorf("the archive's layers decompress to more than %d bytes for %d bytes sent (limit: %d bytes + %d× the archive's size): refusing a decompression bomb%.0w",
			b.n, b.in.n, b.lim.Slack, b.lim.Ratio, errdefs.ErrInvalidArgument)
	}
	return n, err
}

// Stream detects gzip and bzip2 by their magic numbers and decompresses
// under l; anything else is read as it is. xz and zstd are refused by
// name (InvalidArgument).
func Stream(br *bufio.Reader, l Limit) (io.Reader, error) {
	magic, _ := br.Peek(6)
	in := NewCounter(br)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		gz, err := gzip.NewReader(in)
		if err != nil {
			return nil, fmt.Errorf("invalid gzip stream: %v%.0w", err, errdefs.ErrInvalidArgument)
		}
		return l.Guard(in, gz), nil
	case bytes.HasPrefix(magic, []byte("BZh")):
		return l.Guard(in, bzip2.NewReader(in)), nil
	case bytes.HasPrefix(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}):
		return nil, fmt.Errorf("xz-compressed archives are not supported%.0w", errdefs.ErrInvalidArgument)
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return nil, fmt.Errorf("zstd-compressed archives are not supported%.0w", errdefs.ErrInvalidArgument)
	}
	return br, nil
}

// Gzip decompresses the gzip stream r under l (the errors of
// gzip.NewReader as they are).
func Gzip(r io.Reader, l Limit) (io.Reader, error) {
	in := NewCounter(r)
	gz, err := gzip.NewReader(in)
	if err != nil {
		return nil, err
	}
	return l.Guard(in, gz), nil
}
