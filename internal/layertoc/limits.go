package layertoc

import "github.com/wharfproject/wharf/internal/decompress"

// Limits caps every size read from a layer's annotations, footer and
// TOC; DefaultLimits has the numbers and their reasons.
type Limits struct {
	// TOCCompressed and TOCUncompressed cap the TOC as fetched and as
	// decompressed.
	TOCCompressed, TOCUncompressed int64
	// Entries caps the TOC's entries, chunk entries included.
	Entries int
	// PathLen caps an entry's name and link target, in bytes.
	PathLen int
	// ChunksPerFile caps one file's chunks.
	ChunksPerFile int
	// ChunkSize caps one chunk's uncompressed size: ReadFile holds a chunk
	// in memory until its digest is checked.
	ChunkSize int64
	// TailSize is how much of the blob's end the first eStargz request
	// asks for: the footer and, for a small TOC, the TOC with it.
	TailSize int64
	// Decompress is the bomb cap on every decompressed stream.
	Decompress decompress.Limit
}

// DefaultLimits are the caps in force.
func DefaultLimits() Limits {
	return Limits{
		// 150 MiB: containers/storage's cap on a TOC (maxTocSize), so any
		// TOC it pulls partially is read here too; a TOC is held in memory
		// decompressed only as parsed entries.
		TOCCompressed:   150 << 20,
		TOCUncompressed: 150 << 20,
		// 2^20 entries: a real layer holds at most a few 10^5 files (a
		// large node_modules tree), chunk entries included; a parsed
		// entry costs about 200 bytes live (TestMillionEntriesMemory), so
		// the list stays under ~256 MiB.
		Entries: 1 << 20,
		// 4096 bytes: Linux's PATH_MAX; no longer name can be created.
		PathLen: 4096,
		// 2^18 chunks: a 16 GiB file at zstd:chunked's ~64 KiB mean chunk
		// (its rolling checksum splits at 16 bits), 1 TiB at eStargz's
		// 4 MiB default chunk.
		ChunksPerFile: 1 << 18,
		// 16 MiB: 4× eStargz's default 4 MiB chunk, 256× zstd:chunked's
		// mean; a larger chunk is refused and the file is read from a
		// streaming read of the layer instead.
		ChunkSize: 16 << 20,
		// 512 KiB: a gzip'ed eStargz TOC costs about 50 bytes per entry
		// (measured in TestEStargzTOCBytesPerEntry), so a layer of up to
		// ~10,000 entries is listed in one request.
		TailSize: 512 << 10,
	}
}

// Option changes the limits of one Read.
type Option func(*Limits)

// WithLimits replaces the limits (tests lower them).
func WithLimits(l Limits) Option { return func(d *Limits) { *d = l } }
