package layertoc

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strconv"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/decompress"
)

// The eStargz layout (stargz-snapshotter's docs/estargz.md): gzip members
// of tar data, then a gzip member holding the tar entry stargz.index.json
// (the TOC JSON), then a footer: an empty gzip member whose Extra field
// is "SG", 22, "%016xSTARGZ" (the TOC member's offset), 51 bytes; legacy
// stargz wrote the 22 bytes as the whole Extra field, 47 bytes.
const (
	estargzFooterSize = 51
	legacyFooterSize  = 47
	estargzTOCName    = "stargz.index.json"
)

// parseFooter finds the TOC's offset in the blob's last bytes.
func parseFooter(tail []byte) (tocOffset, footerSize int64, err error) {
	if len(tail) >= estargzFooterSize {
		extra, err := gzipExtra(tail[len(tail)-estargzFooterSize:])
		if err == nil && len(extra) == 26 && extra[0] == 'S' && extra[1] == 'G' &&
			binary.LittleEndian.Uint16(extra[2:4]) == 22 {
			if off, err := parseOffset(extra[4:]); err == nil {
				return off, estargzFooterSize, nil
			}
		}
	}
	if len(tail) >= legacyFooterSize {
		extra, err := gzipExtra(tail[len(tail)-legacyFooterSize:])
		if err == nil && len(extra) == 22 {
			if off, err := parseOffset(extra); err == nil {
				return off, legacyFooterSize, nil
			}
		}
	}
	return 0, 0, invalid("no eStargz (51 bytes) or stargz (47 bytes) footer at the end of the blob")
}

// gzipExtra is the Extra field of the gzip header that b starts with
// (b is a footer: a few dozen bytes).
func gzipExtra(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return zr.Extra, nil
}

// parseOffset reads "%016xSTARGZ".
func parseOffset(b []byte) (int64, error) {
	if len(b) != 22 || string(b[16:]) != "STARGZ" {
		return 0, errors.New("no STARGZ magic")
	}
	for _, c := range b[:16] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return 0, errors.New("offset is not hexadecimal")
		}
	}
	return strconv.ParseInt(string(b[:16]), 16, 64)
}

func readEStargz(ctx context.Context, rr RangeReader, desc ocispec.Descriptor, lim Limits) (*TOC, error) {
	want, err := digest.Parse(desc.Annotations[AnnotationEStargzTOCDigest])
	if err != nil {
		return nil, invalid("annotation %s: %v", AnnotationEStargzTOCDigest, err)
	}
	size := desc.Size
	if size < legacyFooterSize {
		return nil, invalid("blob of %d bytes is smaller than a footer", size)
	}
	tailN := min(size, max(lim.TailSize, estargzFooterSize))
	tail, err := readFull(ctx, rr, size-tailN, tailN)
	if err != nil {
		return nil, err
	}
	tocOff, footerN, err := parseFooter(tail)
	if err != nil {
		return nil, err
	}
	tocEnd := size - footerN
	if tocOff < 0 || tocOff >= tocEnd {
		return nil, invalid("footer puts the TOC at %d, outside the blob's 0-%d", tocOff, tocEnd)
	}
	tocN := tocEnd - tocOff
	if tocN > lim.TOCCompressed {
		return nil, tooLarge("TOC of %d bytes compressed (limit %d)", tocN, lim.TOCCompressed)
	}
	var src io.Reader
	if tailStart := size - tailN; tocOff >= tailStart {
		src = bytes.NewReader(tail[tocOff-tailStart : tocEnd-tailStart])
	} else {
		rc, err := rr.ReadRange(ctx, tocOff, tocN)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		src = rc
	}
	entries, err := parseEStargzTOC(src, want, tocOff, tocN, lim)
	if err != nil {
		return nil, err
	}
	return &TOC{Digest: want, Entries: entries}, nil
}

// parseEStargzTOC reads the TOC member (tocN bytes at tocOff) from r,
// checks the JSON against want and lists its entries, then the TOC's
// own tar entry: a container that applies the layer gets that file too.
func parseEStargzTOC(r io.Reader, want digest.Digest, tocOff, tocN int64, lim Limits) ([]Entry, error) {
	in := decompress.NewCounter(io.LimitReader(r, tocN))
	zr, err := gzip.NewReader(in)
	if err != nil {
		return nil, invalid("TOC gzip header: %v", err)
	}
	zr.Multistream(false)
	out := &countReader{r: lim.limitDecompress().Guard(in, zr)}
	tr := tar.NewReader(out)
	h, err := tr.Next()
	if err != nil {
		return nil, invalid("TOC tar header: %v", err)
	}
	if h.Name != estargzTOCName || h.Typeflag != tar.TypeReg {
		return nil, invalid("TOC tar entry is %q (type %q), want %q", h.Name, h.Typeflag, estargzTOCName)
	}
	if h.Size > lim.TOCUncompressed {
		return nil, tooLarge("TOC JSON of %d bytes (limit %d)", h.Size, lim.TOCUncompressed)
	}
	// archive/tar reads a header's blocks and nothing more, so the bytes
	// read so far are where the JSON starts in the member.
	jsonAt := out.n
	dg := want.Algorithm().Digester()
	body := io.TeeReader(tr, dg.Hash())
	f := newFolder(SourceEStargz, lim)
	perr := decodeEntries(body, lim, f.add)
	if _, err := io.Copy(io.Discard, body); err != nil && perr == nil {
		perr = invalid("TOC JSON: %v", err)
	}
	if got := dg.Digest(); got != want {
		return nil, mismatch("TOC JSON hashes to %s, the annotation says %s", got, want)
	}
	if perr != nil {
		return nil, perr
	}
	entries, err := f.finish(tocOff)
	if err != nil {
		return nil, err
	}
	if len(entries) >= lim.Entries {
		return nil, tooLarge("TOC has more than %d entries", lim.Entries)
	}
	return append(entries, Entry{
		Path: "/" + estargzTOCName, Type: TypeFile, Mode: tarMode(h.Mode),
		UID: h.Uid, GID: h.Gid, Size: h.Size, ModTime: h.ModTime, Digest: want,
		Chunks: []Chunk{{Offset: tocOff, CompressedSize: tocN, InnerOffset: jsonAt, Size: h.Size, Digest: want}},
	}), nil
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
