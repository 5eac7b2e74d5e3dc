package contents

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/layertoc"
)

// tocFiles is a TOC's entries by path, for file reads. The cache on disk
// keeps only the layer index of a TOC layer, not its chunks: a file read
// after the TOC left memory reads the TOC again (≤ 2 range requests,
// checked against the annotated digest again), which a file read costs
// anyway, and wharf keeps no second encoder of the publisher's claims.
type tocFiles struct {
	src    layertoc.Source
	byPath map[string]*layertoc.Entry
}

func (r *Room) keepTOC(toc *layertoc.TOC) *tocFiles {
	t := &tocFiles{src: toc.Source, byPath: make(map[string]*layertoc.Entry, len(toc.Entries))}
	var cost int64
	for i := range toc.Entries {
		e := &toc.Entries[i]
		// The later entry of a path wins, as applying the layer keeps it.
		t.byPath[e.Path] = e
		cost += tocEntryCost + int64(len(e.Path)+len(e.Linkname)) + int64(len(e.Chunks))*64
	}
	r.tocs.add(toc.Layer.String(), t, cost)
	return t
}

// toc is the TOC of a layer listed from one, from memory or read again.
func (r *Room) toc(ctx context.Context, blobs Blobs, desc ocispec.Descriptor) (*tocFiles, error) {
	if t, ok := r.tocs.get(desc.Digest.String()); ok {
		return t, nil
	}
	toc, err := layertoc.Read(ctx, rangeOf(blobs, desc), desc)
	if err != nil {
		return nil, err
	}
	return r.keepTOC(toc), nil
}

// tocEntry is the TOC's entry for path p of the layer.
func (t *tocFiles) entry(p string) (*layertoc.Entry, error) {
	e, ok := t.byPath[p]
	if !ok {
		return nil, fmt.Errorf("%s TOC has no entry %q%.0w", t.src, p, errdefs.ErrNotFound)
	}
	return e, nil
}
