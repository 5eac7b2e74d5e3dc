package archive

import (
	"fmt"
	"io"

	"github.com/containerd/errdefs"
)

// Decompression bombs. Import and load decompress what clients send (a
// gzip or bzip2 archive, gzip layers whose DiffID is computed), and a few
// KiB of gzip can expand to GiBs (zeros compress about 1000:1; bzip2 far
// more). Decompressed output is written to disk (load stages the entries of
// a compressed archive) or hashed (DiffIDs, import), so it is capped per
// stream at
//
//	slack + ratio × compressed bytes read so far
//
// with slack 8 GiB and ratio 128: a real layer (text and binaries compress
// 2–10×) passes at any size, a zero-filled file of up to 8 GiB passes, and
// a client can make wharfd write or hash at most 8 GiB + 128 bytes for each
// byte it sends. Memory is not at stake: every stream is read in 256 KiB
// chunks.
const (
	defaultBombSlack = 8 << 30
	defaultBombRatio = 128
)

// decompressLimit is the cap above; the zero value means the defaults
// (tests lower the slack to build small bombs).
type decompressLimit struct {
	slack int64
	ratio int64
}

func (d decompressLimit) orDefault() decompressLimit {
	if d.slack <= 0 {
		d.slack = defaultBombSlack
	}
	if d.ratio <= 0 {
		d.ratio = defaultBombRatio
	}
	return d
}

// guard wraps the decompressor out, which reads the compressed stream in
// (count it with a countingReader between the source and the decompressor).
func (d decompressLimit) guard(in *countingReader, out io.Reader) io.Reader {
	return &bombGuard{in: in, out: out, lim: d.orDefault()}
}

type bombGuard struct {
	in  *countingReader
	out io.Reader
	n   int64
	lim decompressLimit
}

func (g *bombGuard) Read(p []byte) (int, error) {
	n, err := g.out.Read(p)
	g.n += int64(n)
	if max := g.lim.slack + g.lim.ratio*g.in.n; g.n > max {
		return n, fmt.Errorf("decompressed data exceeds %d bytes for %d compressed bytes (limit: %d bytes + %d× the compressed size): refusing a decompression bomb%.0w",
			g.n, g.in.n, g.lim.slack, g.lim.ratio, errdefs.ErrInvalidArgument)
	}
	return n, err
}

// decompressBudget is one cap shared by every decompression of one request
// (the DiffIDs of a load): slack + ratio × the bytes the client sent in
// all, so that naming many (or the same) bomb layers buys no more work than
// one archive of that size may cost.
type decompressBudget struct {
	in  *countingReader // the request body
	lim decompressLimit
	n   int64
}

func (b *decompressBudget) guard(out io.Reader) io.Reader { return &budgetReader{b: b, r: out} }

type budgetReader struct {
	b *decompressBudget
	r io.Reader
}

func (br *budgetReader) Read(p []byte) (int, error) {
	n, err := br.r.Read(p)
	b := br.b
	b.n += int64(n)
	if max := b.lim.slack + b.lim.ratio*b.in.n; b.n > max {
		return n, fmt.Errorf("the archive's layers decompress to more than %d bytes for %d bytes sent (limit: %d bytes + %d× the archive's size): refusing a decompression bomb%.0w",
			b.n, b.in.n, b.lim.slack, b.lim.ratio, errdefs.ErrInvalidArgument)
	}
	return n, err
}
