package registry

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/registry/upload"
)

// Bounds of the blob locations: 8 repositories per blob, 65,536 blobs.
const (
	maxLocationsPerBlob = 8
	maxBlobLocations    = 1 << 16
)

// mountSources are the repositories to try a mount from: where this daemon
// read or wrote the blob on this registry, most recent first, then the
// caller's; never this repository; at most upload.MaxMountSources.
func (r *Repository) mountSources(d digest.Digest, callers []string) []string {
	seen := map[string]bool{r.path: true}
	var out []string
	for _, p := range append(r.svc.blobs.on(d, r.info.Index.Name), callers...) {
		if len(out) == upload.MaxMountSources {
			break
		}
		if !seen[p] && validateRepositoryPath(p) == nil {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// blobLocations is the distribution metadata dockerd keeps per blob: the
// repositories, per registry, where this daemon read the blob (pull, copy)
// or wrote it (push, copy), most recent first. It only picks mount sources,
// so losing it (it lives in memory; a restart empties it) costs an upload,
// never correctness. Bounded: maxLocationsPerBlob repositories per blob,
// maxBlobLocations blobs (beyond, the least recently used is forgotten).
type blobLocations struct {
	mu sync.Mutex
	m  *simplelru.LRU[digest.Digest, []blobLocation]
}

type blobLocation struct{ index, path string }

func newBlobLocations() *blobLocations {
	return &blobLocations{m: mustLRU[digest.Digest, []blobLocation](maxBlobLocations)}
}

func (b *blobLocations) add(d digest.Digest, index, path string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	locs, _ := b.m.Get(d)
	l := blobLocation{index, path}
	out := []blobLocation{l}
	for _, o := range locs {
		if o != l && len(out) < maxLocationsPerBlob {
			out = append(out, o)
		}
	}
	b.m.Add(d, out)
}

// on lists the repositories on index known to hold d, most recent first.
func (b *blobLocations) on(d digest.Digest, index string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	locs, _ := b.m.Get(d)
	for _, l := range locs {
		if l.index == index {
			out = append(out, l.path)
		}
	}
	return out
}
