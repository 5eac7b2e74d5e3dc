package graph

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/store"
)

// lookupView is what a local read of one image starts from: the record
// name resolves to, the platform view of it that name and platform select
// (view), and that view's manifest and config.
func (s *Service) lookupView(name string, platform *ocispec.Platform) (rec, view *ImageRecord, meta *store.ImageMeta, err error) {
	if rec, err = s.images.Lookup(name); err != nil {
		return nil, nil, nil, err
	}
	if view, err = s.view(rec, name, platform); err != nil {
		return nil, nil, nil, err
	}
	if meta, err = s.images.Meta(view); err != nil {
		return nil, nil, nil, err
	}
	return rec, view, meta, nil
}

// view is the platform of rec that name and platform select, as Engine 29
// chooses: the platform asked for (the present one it runs best; NotFound
// when none), else the platform manifest name@digest names, else rec as
// recorded — the daemon's platform when present, the first present one
// otherwise (store.PlatformImage).
func (s *Service) view(rec *ImageRecord, name string, platform *ocispec.Platform) (*ImageRecord, error) {
	if platform != nil {
		return s.images.PlatformView(rec, name, platform)
	}
	if n, err := reference.ParseNormalizedNamed(name); err == nil {
		if c, ok := n.(reference.Canonical); ok && c.Digest() != rec.Manifest.Digest {
			for _, p := range rec.Present() {
				if p.Manifest.Digest == c.Digest() {
					return rec.View(p), nil
				}
			}
		}
	}
	return rec, nil
}

// CheckPlatform reports whether the local image name holds platform p:
// nil, or NotFound in dockerd's words. Push with a platform asks it for
// every tag before anything is uploaded.
func (s *Service) CheckPlatform(ctx context.Context, name string, p ocispec.Platform) error {
	rec, err := s.images.Lookup(name)
	if err != nil {
		return err
	}
	_, err = s.images.SelectPlatforms(rec, name, []ocispec.Platform{p})
	return err
}

// ImageDeletePlatforms answers DELETE /images/{name}?platforms=… (API
// 1.50): the present platforms of name that ps select are removed from the
// image, which keeps its references and its other platforms (Engine 29's
// rmi --platform). The response lists each removed platform manifest as
// Deleted, as moby does. Removing every present platform deletes the image
// as a plain rmi would (moby keeps an image without content; wharf keeps no
// record without a manifest). Unlike moby, force is not required: what is
// removed is this image's platform; blobs another image uses stay.
func (s *Service) ImageDeletePlatforms(ctx context.Context, name string, ps []ocispec.Platform, force, prune bool) ([]image.DeleteResponse, error) {
	rec, err := s.images.Lookup(name)
	if err != nil {
		return nil, err
	}
	sel, err := s.images.SelectPlatforms(rec, name, ps)
	if err != nil {
		return nil, err
	}
	if len(sel) == len(rec.Present()) {
		return s.ImageDelete(ctx, name, force, prune)
	}
	var resp []image.DeleteResponse
	_, err = s.images.Update(prune, func(tx *store.Txn) error {
		resp = nil
		cur := tx.Image(rec.ID)
		if cur == nil || cur.Target.Digest != rec.Target.Digest {
			return fmt.Errorf("image %s changed while its platforms were removed; try again%.0w", name, errdefs.ErrConflict)
		}
		if _, err := tx.RemovePlatforms(rec.ID, sel); err != nil {
			return err
		}
		for _, p := range sel {
			resp = append(resp, image.DeleteResponse{Deleted: p.Manifest.Digest.String()})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// No event, as moby's deleteImagePlatforms logs none: the image
	// (its ID, its references) is still there.
	return resp, nil
}
