package contents

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/internal/layerindex"
	"github.com/wharfproject/wharf/internal/pair"
)

// LayerIndexes are the indexes of img's layers from from up, bottom first,
// each from the first source that applies (the diff's upper layers), up to
// layerBuilds of them built at once. The indexes are shared: read them,
// never change them.
func (r *Room) LayerIndexes(ctx context.Context, img *Image, from int) ([]*layerindex.Index, error) {
	lds, err := r.layersFrom(ctx, img, from)
	if err != nil {
		return nil, err
	}
	out := make([]*layerindex.Index, len(lds))
	for i, ld := range lds {
		out[i] = ld.ix
	}
	return out, nil
}

// LayerIndexesOfTwo are LayerIndexes of a and of b from the same layer
// up, both at once: a diff's usual case is one new top layer a side, two
// streams that overlap as a pull's downloads do (each image up to
// layerBuilds builds).
func (r *Room) LayerIndexesOfTwo(ctx context.Context, a, b *Image, from int) (ai, bi []*layerindex.Index, err error) {
	err = pair.Both(ctx, func(ctx context.Context) (err error) {
		ai, err = r.LayerIndexes(ctx, a, from)
		return err
	}, func(ctx context.Context) (err error) {
		bi, err = r.LayerIndexes(ctx, b, from)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return ai, bi, nil
}

// CachedLayerIndexes are the indexes of img's layers below n when every
// one is already held, in memory or on disk, and checked against img's
// diff IDs; ok is false otherwise. Nothing is built and no layer read: a
// caller that merely could use them (the diff's shared layers) pays for
// no download.
func (r *Room) CachedLayerIndexes(img *Image, n int) (ixs []*layerindex.Index, ok bool) {
	if n < 0 || n > len(img.Layers) {
		return nil, false
	}
	ixs = make([]*layerindex.Index, n)
	for i := range n {
		desc := img.Layers[i]
		ld, held := r.layers.get(desc.Digest.String())
		if !held {
			e, err := r.cache.Get(desc.Digest)
			if err != nil {
				return nil, false
			}
			ld = &layerData{ix: e.Index, gz: e.Gzip}
			r.layers.add(desc.Digest.String(), ld, ld.cost())
		}
		if len(img.DiffIDs) == len(img.Layers) && checkDiffID(ld.ix, img.DiffIDs[i]) != nil {
			return nil, false
		}
		ixs[i] = ld.ix
	}
	return ixs, true
}

// layersFrom are the indexes of img's layers from from up, bottom first,
// up to layerBuilds of them built at once; the first failure stops the
// rest.
func (r *Room) layersFrom(ctx context.Context, img *Image, from int) ([]*layerData, error) {
	if from < 0 || from > len(img.Layers) {
		return nil, fmt.Errorf("layer %d of an image of %d%.0w", from, len(img.Layers), errdefs.ErrInvalidArgument)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := len(img.Layers) - from
	lds := make([]*layerData, n)
	errs := make([]error, n)
	sem := make(chan struct{}, layerBuilds)
	var wg sync.WaitGroup
	for k := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[k] = ctx.Err()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			lds[k], errs[k] = r.layer(ctx, img, from+k)
			if errs[k] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// The first failure in layer order, not the cancellations it caused.
	var first error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
		if err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	return lds, nil
}
