package daemon

import (
	"context"

	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
)

// imageStreamer is the image store's list an entry at a time
// (graph.Store.ImagesEach).
type imageStreamer interface {
	ImagesEach(ctx context.Context, opts types.ImageListOptions, emit func(image.Summary) error) error
}

// ImagesEach lets api/server stream GET /images/json from the store's
// ImagesEach (the list of 50,000 images is never held whole); a store
// without it has its list handed over entry by entry.
func (d *Daemon) ImagesEach(ctx context.Context, opts types.ImageListOptions, emit func(image.Summary) error) error {
	if st, ok := d.imageStore.(imageStreamer); ok {
		return st.ImagesEach(ctx, opts, emit)
	}
	list, err := d.imageStore.Images(ctx, opts)
	if err != nil {
		return err
	}
	for _, img := range list {
		if err := emit(img); err != nil {
			return err
		}
	}
	return nil
}
