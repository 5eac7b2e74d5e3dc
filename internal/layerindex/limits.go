package layerindex

import (
	"fmt"

	"github.com/containerd/errdefs"
)

// MaxSymlinkHops is how many symlinks one resolution follows before it
// gives up: the Linux kernel's MAXSYMLINKS (40), so a chain the kernel
// follows inside a container resolves here too, and a loop fails as
// ELOOP would.
const MaxSymlinkHops = 40

// Limits bound what one layer may cost. The zero value means the defaults
// (DefaultLimits); a field set to a positive number replaces its default.
type Limits struct {
	// MaxEntries caps the entries of one layer. Default 500,000: the
	// largest layers of public images hold about 150k–300k entries (a full
	// TeX Live, a node_modules tree), and at about 180 bytes of heap an
	// entry (TestMemoryPerEntry) 500k cost about 90 MiB; a layer of 10⁶
	// tiny entries is refused at the cap with a peak RSS of about 140 MB.
	MaxEntries int
	// MaxPathLen caps an entry's path and link target in bytes. Default
	// 4096: Linux's PATH_MAX; the kernel refuses longer names, so no real
	// image holds one.
	MaxPathLen int
	// MaxIndexBytes caps an index's in-memory size (a fixed cost per entry
	// plus its path and link bytes), which also bounds its encoding and
	// what Decode accepts. Default 128 MiB: 500k entries with paths of
	// about 100 bytes, with room to spare, while 500k maximal paths (2 GiB)
	// are refused.
	MaxIndexBytes int64
	// MaxSparseBytes caps the logical bytes of sparse files one layer may
	// declare, which Build hashes as zeros. Default 8 GiB: the slack of the
	// decompression-bomb cap (internal/decompress), so a sparse file costs
	// no more hashing than a zero-filled one.
	MaxSparseBytes int64
	// MaxViewNodes caps the nodes of a merged view, implicit parent
	// directories included: a 4096-byte path can imply 2,048 of them.
	// Default 2,000,000: four full layers' worth of the largest real ones.
	MaxViewNodes int
	// MaxMergeSteps caps the path components Merge walks in all, symlink
	// hops included: each entry's parent is resolved inside the root, and
	// a hostile layer can make every resolution take 40 hops of 4096-byte
	// targets (80k steps). Default 100,000,000, about two seconds of CPU:
	// 500k entries 10 deep take 5M.
	MaxMergeSteps int64
	// MaxTarBytes, when positive, is the most bytes the caller's
	// decompressor will deliver (its bomb cap for this blob's size, or the
	// size of an uncompressed blob). A file whose data would end past it
	// is refused at its header, before its bytes are inflated and hashed:
	// a 10 MiB layer declaring a 10 GiB file of zeros is refused at once
	// instead of after 9 GiB and about 20 s of CPU. No default: only the
	// caller knows the blob.
	MaxTarBytes int64
}

// DefaultLimits are the limits the zero Limits stands for.
var DefaultLimits = Limits{
	MaxEntries:     500_000,
	MaxPathLen:     4096,
	MaxIndexBytes:  128 << 20,
	MaxSparseBytes: 8 << 30,
	MaxViewNodes:   2_000_000,
	MaxMergeSteps:  100_000_000,
}

// orDefault fills the zero fields with the defaults.
func (l Limits) orDefault() Limits {
	d := DefaultLimits
	if l.MaxEntries > 0 {
		d.MaxEntries = l.MaxEntries
	}
	if l.MaxPathLen > 0 {
		d.MaxPathLen = l.MaxPathLen
	}
	if l.MaxIndexBytes > 0 {
		d.MaxIndexBytes = l.MaxIndexBytes
	}
	if l.MaxSparseBytes > 0 {
		d.MaxSparseBytes = l.MaxSparseBytes
	}
	if l.MaxViewNodes > 0 {
		d.MaxViewNodes = l.MaxViewNodes
	}
	if l.MaxMergeSteps > 0 {
		d.MaxMergeSteps = l.MaxMergeSteps
	}
	if l.MaxTarBytes > 0 {
		d.MaxTarBytes = l.MaxTarBytes
	}
	return d
}

// entryOverhead is the in-memory cost of an Entry beside its strings:
// the struct (unsafe.Sizeof(Entry{}) is 176 on 64-bit) and the two string
// allocations' rounding. TestMemoryPerEntry checks the estimate against
// the heap.
const entryOverhead = 192

// entryCost is an entry's share of MaxIndexBytes.
func entryCost(e *Entry) int64 {
	return entryOverhead + int64(len(e.Path)) + int64(len(e.Linkname))
}

// budget counts an index's entries and bytes against the limits.
type budget struct {
	lim     Limits
	entries int
	bytes   int64
	sparse  int64
}

func (b *budget) add(e *Entry) error {
	if len(e.Path) > b.lim.MaxPathLen || len(e.Linkname) > b.lim.MaxPathLen {
		return limitErr("entry %.64q…: path or link target over %d bytes", e.Path, b.lim.MaxPathLen)
	}
	b.entries++
	if b.entries > b.lim.MaxEntries {
		return limitErr("more than %d entries in one layer", b.lim.MaxEntries)
	}
	b.bytes += entryCost(e)
	if b.bytes > b.lim.MaxIndexBytes {
		return limitErr("index over %d bytes in memory (at entry %d)", b.lim.MaxIndexBytes, b.entries)
	}
	// A regular file's data is its size in the stream (a sparse one's is
	// less: MaxSparseBytes caps it).
	if b.lim.MaxTarBytes > 0 && e.Type == TypeFile && !e.Sparse && e.Size > b.lim.MaxTarBytes-e.DataOffset {
		return limitErr("entry %.64q… of %d bytes ends past the %d bytes the layer may decompress to: refusing a decompression bomb", e.Path, e.Size, b.lim.MaxTarBytes)
	}
	if e.Sparse {
		b.sparse += e.Size
		if e.Size < 0 || b.sparse > b.lim.MaxSparseBytes {
			return limitErr("sparse files declare more than %d bytes", b.lim.MaxSparseBytes)
		}
	}
	return nil
}

func limitErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format+"%.0w", append(append([]any{ErrLimit}, args...), errdefs.ErrResourceExhausted)...)
}
