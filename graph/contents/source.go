package contents

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	"github.com/klauspost/compress/zstd"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/contents/indexcache"
	"github.com/wharfproject/wharf/internal/decompress"
	"github.com/wharfproject/wharf/internal/gzindex"
	"github.com/wharfproject/wharf/internal/layerindex"
	"github.com/wharfproject/wharf/internal/layertoc"
)

// ErrDiffIDMismatch is a layer whose uncompressed digest is not the one its
// image's config names.
var ErrDiffIDMismatch = fmt.Errorf("layer diff ID mismatch%.0w", errdefs.ErrDataLoss)

// maxZstdWindow caps the memory of a zstd decoder: 64 MiB, zstd's largest
// window in normal use (level 19 and --long use 8–128 MiB; the format allows
// 3.75 TiB). A frame that asks for more is refused.
const maxZstdWindow = 64 << 20

// The layer blob formats, told by their first bytes (peek 4).
type blobFormat int

const (
	formatTar blobFormat = iota
	formatGzip
	formatZstd
)

func formatOf(head []byte) blobFormat {
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		return formatGzip
	case bytes.Equal(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return formatZstd
	}
	return formatTar
}

// newZstd is a zstd decoder within maxZstdWindow, on one goroutine.
func newZstd(r io.Reader) (*zstd.Decoder, error) {
	return zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow), zstd.WithDecoderMaxMemory(maxZstdWindow*2))
}

// layerData is what the room holds of one layer.
type layerData struct {
	ix *layerindex.Index
	gz *gzindex.Index // checkpoints of a gzip layer read whole; nil otherwise
}

// cost is the heap layerData holds, estimated as layerindex does: a fixed
// cost per entry plus its strings, and the checkpoints' windows.
func (ld *layerData) cost() int64 {
	var n int64
	for i := range ld.ix.Entries {
		e := &ld.ix.Entries[i]
		n += 180 + int64(len(e.Path)+len(e.Linkname))
	}
	if ld.gz != nil {
		for _, c := range ld.gz.Checkpoints {
			n += 64 + int64(len(c.Window))
		}
	}
	return n
}

// layer is the index of img's layer i, from the first source that applies:
// memory, the cache on disk, the local layer, the publisher's TOC, one
// streaming read. Concurrent callers for one digest share one build.
func (r *Room) layer(ctx context.Context, img *Image, i int) (*layerData, error) {
	desc := img.Layers[i]
	var want digest.Digest
	if len(img.DiffIDs) == len(img.Layers) {
		want = img.DiffIDs[i]
	}
	key := desc.Digest.String()
	ld, ok := r.layers.get(key)
	if ok {
		r.cache.Touch(desc.Digest)
	}
	if !ok || (ld.ix.Source.FromTOC() && img.Blobs.Local(desc)) {
		var err error
		ld, err = r.builds.do(ctx, key, func(ctx context.Context) (*layerData, error) {
			return r.load(ctx, img.Blobs, desc, img.Want)
		})
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", desc.Digest, err)
		}
	}
	// Each caller checks its own image's diff ID: the index is the
	// verified layer's, whichever config names it.
	if err := checkDiffID(ld.ix, want); err != nil {
		return nil, fmt.Errorf("layer %s: %w", desc.Digest, err)
	}
	return ld, nil
}

func checkDiffID(ix *layerindex.Index, want digest.Digest) error {
	if want != "" && ix.DiffID != "" && ix.DiffID != want {
		return fmt.Errorf("%w: the layer's tar is %s, the config says %s", ErrDiffIDMismatch, ix.DiffID, want)
	}
	return nil
}

// load builds (or reads) the index of one layer and keeps it, on disk and
// in memory. Nothing is kept unless the layer's bytes were verified (a
// whole read) or the TOC was (its annotated digest).
func (r *Room) load(ctx context.Context, blobs Blobs, desc ocispec.Descriptor, want *Want) (*layerData, error) {
	local := blobs.Local(desc)
	// A TOC's index is the publisher's claim: a local layer replaces it
	// with wharf's own reading.
	if e, err := r.cache.Get(desc.Digest); err == nil && !(local && e.Index.Source.FromTOC()) {
		ld := &layerData{ix: e.Index, gz: e.Gzip}
		r.layers.add(desc.Digest.String(), ld, ld.cost())
		return ld, nil
	}
	var ld *layerData
	var err error
	if !local {
		ld, err = r.loadTOC(ctx, blobs, desc)
		if err != nil && !errors.Is(err, layertoc.ErrNoTOC) {
			return nil, err
		}
	}
	if ld == nil {
		ld, err = r.loadStream(ctx, blobs, desc, local, want)
		if err != nil {
			return nil, err
		}
	}
	ld.ix.Layer = desc.Digest
	// The cache names its files by sha256 only: a layer of another
	// digest (sha512, rare) is indexed in memory alone.
	if desc.Digest.Validate() == nil && desc.Digest.Algorithm() == digest.SHA256 {
		if err := r.cache.Put(&indexcache.Entry{Index: ld.ix, Gzip: ld.gz}); err != nil {
			return nil, fmt.Errorf("keeping the layer index: %w", err)
		}
	}
	r.obs.IndexBuilt(ld.ix.Source.String())
	r.layers.add(desc.Digest.String(), ld, ld.cost())
	return ld, nil
}

// loadStream reads the layer whole once. Blobs.Open's reader fails at EOF
// when the bytes do not match the digest, so the blob is read to its end
// before the index is believed.
func (r *Room) loadStream(ctx context.Context, blobs Blobs, desc ocispec.Descriptor, local bool, want *Want) (*layerData, error) {
	rc, err := blobs.Open(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	ld, kept, err := buildStream(ctx, rc, desc, r.lim, want.keep(maxKeptPerLayer))
	if err != nil {
		return nil, err
	}
	// The blob was read to its end and its digest held: what the pass
	// kept is the layer's.
	for _, k := range kept {
		key := fileKey{desc.Digest, k.HeaderOffset}
		if k.Declined {
			r.declined.add(declinedKey{key, want}, struct{}{}, declinedCost)
			continue
		}
		r.files.add(key, k.Data, int64(len(k.Data)))
	}
	ld.ix.Source = layerindex.SourceStream
	if local {
		ld.ix.Source = layerindex.SourceLayer
	}
	return ld, nil
}

// gzipSpan is the checkpoint span of a gzip layer of size compressed
// bytes: gzindex.DefaultSpan (2 MiB), wider past 2 GiB so that an
// incompressible layer has at most about 1,024 checkpoints, whose windows
// (32 MiB) stay within gzindex.MaxWindowBytes (64 MiB): past that cap a
// read decodes from the last window recorded, however far behind.
func gzipSpan(size int64) int64 { return max(gzindex.DefaultSpan, size/1024) }

// buildStream indexes the layer blob r (gzip, zstd or a plain tar, told by
// its first bytes) in one pass under the decompression-bomb caps, recording
// gzip checkpoints in the same pass, and reads r to its end. desc is the
// blob's descriptor (its size and digest verified by the reader at EOF): a
// file declaring more data than the blob may decompress to is refused at
// its header.
func buildStream(ctx context.Context, r io.Reader, desc ocispec.Descriptor, lim layerindex.Limits, keep layerindex.Keep) (*layerData, []layerindex.Kept, error) {
	size := desc.Size
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4)
	in := decompress.NewCounter(br)
	var bomb decompress.Limit
	ld := &layerData{}
	var kept []layerindex.Kept
	var err error
	switch formatOf(head) {
	case formatGzip:
		lim.MaxTarBytes = tarCap(size, bomb.Max(size))
		zr := gzindex.NewReader(in, gzindex.WithSpan(gzipSpan(size)))
		if ld.ix, kept, err = layerindex.BuildWith(ctx, bomb.Guard(in, zr), lim, layerindex.Options{Keep: keep}); err != nil {
			return nil, nil, err
		}
		if ld.gz, err = zr.Index(); err != nil {
			return nil, nil, err
		}
	case formatZstd:
		zr, err := newZstd(in)
		if err != nil {
			return nil, nil, err
		}
		defer zr.Close()
		lim.MaxTarBytes = tarCap(size, bomb.Max(size))
		if ld.ix, kept, err = layerindex.BuildWith(ctx, bomb.Guard(in, zr), lim, layerindex.Options{Keep: keep}); err != nil {
			return nil, nil, err
		}
	default:
		lim.MaxTarBytes = tarCap(size, size)
		// A plain tar's DiffID is its blob digest, which r checks at its
		// end: the pass need not hash the stream a second time.
		opts := layerindex.Options{Keep: keep}
		if desc.Digest.Validate() == nil && desc.Digest.Algorithm() == digest.SHA256 {
			opts.DiffID = desc.Digest
		}
		if ld.ix, kept, err = layerindex.BuildWith(ctx, in, lim, opts); err != nil {
			return nil, nil, err
		}
	}
	// Whatever follows the compressed stream is part of the blob: read
	// it, so that the digest check at EOF sees every byte.
	if _, err := io.Copy(io.Discard, br); err != nil {
		return nil, nil, err
	}
	return ld, kept, nil
}

// tarCap is Limits.MaxTarBytes for a blob of size bytes: max, or no
// early check when the size is unknown.
func tarCap(size, max int64) int64 {
	if size <= 0 {
		return 0
	}
	return max
}

// loadTOC lists the layer from its eStargz or zstd:chunked TOC, checked
// against the annotated digest: ErrNoTOC when it announces none.
func (r *Room) loadTOC(ctx context.Context, blobs Blobs, desc ocispec.Descriptor) (*layerData, error) {
	if _, err := layertoc.Detect(desc); err != nil {
		return nil, err
	}
	toc, err := layertoc.Read(ctx, rangeOf(blobs, desc), desc)
	if err != nil {
		return nil, err
	}
	r.keepTOC(toc)
	ix, err := indexOfTOC(toc, r.lim)
	if err != nil {
		return nil, err
	}
	return &layerData{ix: ix}, nil
}

// indexOfTOC is the layer index a TOC claims. It goes through Encode and
// Decode, so that it meets every rule of an index Build writes (clean
// paths, types and modes that agree, the limits) before a view uses it.
func indexOfTOC(toc *layertoc.TOC, lim layerindex.Limits) (*layerindex.Index, error) {
	ix := &layerindex.Index{Layer: toc.Layer, TarSize: -1, Entries: make([]layerindex.Entry, 0, len(toc.Entries))}
	switch toc.Source {
	case layertoc.SourceEStargz:
		ix.Source = layerindex.SourceEstargz
	case layertoc.SourceZstdChunked:
		ix.Source = layerindex.SourceZstdChunked
	default:
		return nil, fmt.Errorf("TOC of unknown kind %q%.0w", toc.Source, errdefs.ErrInvalidArgument)
	}
	for i := range toc.Entries {
		te := &toc.Entries[i]
		e := layerindex.Entry{
			Path: te.Path, Type: typeOfTOC(te.Type), Mode: te.Mode,
			UID: int64(te.UID), GID: int64(te.GID), Size: te.Size, ModTime: te.ModTime,
			Linkname: te.Linkname, Devmajor: te.Devmajor, Devminor: te.Devminor,
			HeaderOffset: -1, DataOffset: -1,
		}
		if te.Digest.Validate() == nil && te.Digest.Algorithm() == digest.SHA256 {
			if b, err := hex.DecodeString(te.Digest.Encoded()); err == nil && len(b) == len(e.SHA256) {
				copy(e.SHA256[:], b)
				e.HasDigest = true
			}
		}
		ix.Entries = append(ix.Entries, e)
	}
	var buf bytes.Buffer
	if err := layerindex.Encode(&buf, ix); err != nil {
		return nil, err
	}
	return layerindex.Decode(&buf, lim)
}

func typeOfTOC(t layertoc.Type) layerindex.Type {
	switch t {
	case layertoc.TypeFile:
		return layerindex.TypeFile
	case layertoc.TypeDir:
		return layerindex.TypeDir
	case layertoc.TypeSymlink:
		return layerindex.TypeSymlink
	case layertoc.TypeHardlink:
		return layerindex.TypeHardlink
	case layertoc.TypeChar:
		return layerindex.TypeChar
	case layertoc.TypeBlock:
		return layerindex.TypeBlock
	case layertoc.TypeFifo:
		return layerindex.TypeFIFO
	}
	return 0 // invalid: Decode refuses it
}

// blobRange reads one blob of Blobs by range (gzindex's and layertoc's
// RangeReader).
type blobRange struct {
	blobs Blobs
	desc  ocispec.Descriptor
}

func rangeOf(b Blobs, desc ocispec.Descriptor) blobRange { return blobRange{b, desc} }

func (b blobRange) ReadRange(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	return b.blobs.ReadRange(ctx, b.desc, off, n)
}
