package graph

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/store"
)

// ImageHistory answers GET /images/{name}/history like dockerd: one entry
// per config history entry, newest first; Id is "<missing>" except on the
// top entry (the image ID, with the image's tags); Size is the layer's size
// (compressed, as everywhere in wharf) for entries that made a layer.
func (s *Service) ImageHistory(ctx context.Context, name string, platform *ocispec.Platform) ([]image.HistoryResponseItem, error) {
	_, view, meta, err := s.lookupView(name, platform)
	if err != nil {
		return nil, err
	}
	return buildHistory(meta, view)
}

func buildHistory(meta *store.ImageMeta, rec *ImageRecord) ([]image.HistoryResponseItem, error) {
	cfg := meta.Config
	layers := meta.Manifest.Layers
	hist := cfg.History
	if len(hist) == 0 {
		// No history recorded (some hand-made images): one synthetic entry
		// per layer, so the layers are still shown.
		for range layers {
			hist = append(hist, ocispec.History{Created: cfg.Created})
		}
		if len(hist) == 0 {
			hist = []ocispec.History{{Created: cfg.Created}}
		}
	}
	out := make([]image.HistoryResponseItem, 0, len(hist))
	layer := 0
	for _, h := range hist {
		item := image.HistoryResponseItem{
			ID:        "<missing>",
			Created:   unixOrZero(h.Created),
			CreatedBy: h.CreatedBy,
			Comment:   h.Comment,
		}
		if !h.EmptyLayer {
			if layer >= len(layers) {
				return nil, fmt.Errorf("image %s: too many non-empty layers in History section%.0w", rec.ID, errdefs.ErrInvalidArgument)
			}
			item.Size = layers[layer].Size
			layer++
		}
		out = append(out, item)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	out[0].ID = rec.ID.String()
	if len(rec.RepoTags) > 0 {
		out[0].Tags = store.FamiliarRefs(rec.RepoTags)
	}
	return out, nil
}

func unixOrZero(t *time.Time) int64 {
	if t == nil {
		return time.Time{}.Unix()
	}
	return t.Unix()
}
