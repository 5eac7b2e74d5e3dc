package contents

import (
	"os"
	"path/filepath"

	"github.com/wharfproject/wharf/graph/contents/indexcache"
	"github.com/wharfproject/wharf/internal/layerindex"
)

// Observer is told of the room's indexes; the daemon's metrics implement
// it. Its methods must be cheap and safe for concurrent use.
type Observer interface {
	// IndexUsage is the files and bytes of the indexes on disk, after
	// every change.
	IndexUsage(files int, bytes int64)
	// IndexBuilt is one index built, by its source ("layer", "stream",
	// "estargz", "zstd:chunked").
	IndexBuilt(source string)
	// IndexEvicted is one index removed for the budget.
	IndexEvicted()
}

type nopObserver struct{}

func (nopObserver) IndexUsage(int, int64) {}
func (nopObserver) IndexBuilt(string)     {}
func (nopObserver) IndexEvicted()         {}

// Options configure a Room.
type Options struct {
	// Dir holds the indexes (indexcache's layout): wharf/layerindex under
	// the data-root, beside the store's own files.
	Dir string
	// Budget is the disk the indexes may use; <= 0: indexcache.DefaultBudget.
	Budget int64
	// Limits cap every layer and view; the zero value is layerindex's
	// defaults.
	Limits layerindex.Limits
	// Observer is told of the indexes; nil = none.
	Observer Observer
}

// DirIn is where the indexes of the data-root root live.
func DirIn(root string) string { return filepath.Join(root, "wharf", "layerindex") }

// Memory bounds of the decoded caches. Each is an estimate of heap
// (layerIndexCost): enough for the layers of a few large images at once,
// while a daemon that browses many images keeps its memory flat.
const (
	// memIndexBudget holds decoded layer indexes (and gzip checkpoints):
	// 256 MiB, about 1.4 M entries at 180 bytes each.
	memIndexBudget = 256 << 20
	// memViewBudget holds merged views by manifest digest: 256 MiB; a view
	// costs about what its layers' entries do.
	memViewBudget = 256 << 20
	// memTOCBudget holds TOCs (with their chunks) for file reads: 64 MiB.
	// A TOC not held is read again (≤ 2 range requests) when a file of its
	// layer is read.
	memTOCBudget = 64 << 20
	// tocEntryCost is the estimated heap of one TOC entry beyond its
	// strings: the Entry struct and one chunk.
	tocEntryCost = 200
	// memFileBudget holds verified bytes of files that were just read or
	// that an index pass kept for the read after it (Image.Want): 64 MiB,
	// a few package databases and binaries. A file not held is read by
	// range again.
	memFileBudget = 64 << 20
	// maxKeptPerLayer caps what one streaming index pass keeps of a
	// layer's files for its caller: 16 MiB (maxHeldFile), so the three
	// builds of one request hold at most 48 MiB of them.
	maxKeptPerLayer = maxHeldFile
	// memDeclinedBudget bounds the files remembered as declined by a
	// Want's Keep: 1 MiB at declinedCost each, about 16,000 (a layer's
	// executables that are not Go binaries).
	memDeclinedBudget = 1 << 20
	declinedCost      = 64
)

// Room answers ls, cat and cp over layer indexes.
type Room struct {
	cache *indexcache.Cache
	lim   layerindex.Limits
	obs   Observer
	tmp   string // spool of large files being verified

	layers *memCache[string, *layerData]
	views  *memCache[string, *layerindex.View]
	tocs   *memCache[string, *tocFiles]
	files  *memCache[fileKey, []byte] // verified file bytes
	// declined are the files an index pass read whole for an image's Want
	// and its Keep dropped (read.go's ErrDeclined).
	declined *memCache[declinedKey, struct{}]

	builds     flight[*layerData]
	viewBuilds flight[*layerindex.View]
}

// New opens the room's index directory.
func New(opts Options) (*Room, error) {
	obs := opts.Observer
	if obs == nil {
		obs = nopObserver{}
	}
	c, err := indexcache.Open(opts.Dir, indexcache.Options{
		Budget: opts.Budget, Limits: opts.Limits,
		OnUsage: obs.IndexUsage, OnEvict: obs.IndexEvicted,
	})
	if err != nil {
		return nil, err
	}
	// Spools of file reads a crash left (read.go's copyVerified).
	if old, err := filepath.Glob(filepath.Join(opts.Dir, spoolPattern)); err == nil {
		for _, p := range old {
			_ = os.Remove(p)
		}
	}
	return &Room{
		cache:    c,
		lim:      opts.Limits,
		obs:      obs,
		tmp:      opts.Dir,
		layers:   newMemCache[string, *layerData](memIndexBudget),
		views:    newMemCache[string, *layerindex.View](memViewBudget),
		tocs:     newMemCache[string, *tocFiles](memTOCBudget),
		files:    newMemCache[fileKey, []byte](memFileBudget),
		declined: newMemCache[declinedKey, struct{}](memDeclinedBudget),
	}, nil
}

// SetBudget changes the disk budget of the indexes (a reload).
func (r *Room) SetBudget(n int64) { r.cache.SetBudget(n) }

// Usage is the files and bytes of the indexes on disk, and the budget.
func (r *Room) Usage() (files int, bytes, budget int64) {
	files, bytes = r.cache.Usage()
	return files, bytes, r.cache.Budget()
}
