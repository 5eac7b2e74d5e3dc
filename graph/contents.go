package graph

import (
	"context"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/contents"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/graph/store"
)

// ImageFiles lists the paths of an image, local or remote (graph/contents).
func (s *Service) ImageFiles(ctx context.Context, name string, opts types.FilesOptions, emit func(types.FileEntry) error) error {
	if opts.Remote {
		return s.remoteFiles(ctx, name, opts, emit)
	}
	img, err := s.contentsImage(ctx, name, opts)
	if err != nil {
		return err
	}
	return s.contents.Files(ctx, img, opts, emit)
}

// ImageStat is the stat of one path of an image, as docker's
// X-Docker-Container-Path-Stat carries it (graph/contents).
func (s *Service) ImageStat(ctx context.Context, name string, opts types.FilesOptions) (container.PathStat, error) {
	if opts.Remote {
		return s.remoteStat(ctx, name, opts)
	}
	img, err := s.contentsImage(ctx, name, opts)
	if err != nil {
		return container.PathStat{}, err
	}
	return s.contents.Stat(ctx, img, opts.Path)
}

// ImageArchive writes a tar of one path of an image: start is called once
// with the path's stat, before the first byte, and returns where the tar
// goes (graph/contents).
func (s *Service) ImageArchive(ctx context.Context, name string, opts types.FilesOptions, start func(container.PathStat) (io.Writer, error)) error {
	if opts.Remote {
		return s.remoteArchive(ctx, name, opts, start)
	}
	img, err := s.contentsImage(ctx, name, opts)
	if err != nil {
		return err
	}
	return s.contents.Archive(ctx, img, opts.Path, start)
}

// LayerIndexUsage is the files and bytes of the layer indexes on disk and
// their budget (graph/contents).
func (s *Service) LayerIndexUsage() (files int, bytes, budget int64) { return s.contents.Usage() }

// SetLayerIndexBudget changes the layer indexes' disk budget (a reload).
func (s *Service) SetLayerIndexBudget(n int64) { s.contents.SetBudget(n) }

// contentsImage is the platform image name names: the local one (as local
// inspect chooses it, opts.Platform included), or with opts.Remote the
// registry's, resolved with the caller's credentials, which is what lets
// the caller see the indexes of its layers. A remote image's layers that
// the store holds are read from the store (distribution.RemoteBlobs).
func (s *Service) contentsImage(ctx context.Context, name string, opts types.FilesOptions) (*contents.Image, error) {
	if opts.Remote {
		rl, err := s.dist.RemoteLayers(ctx, name, opts)
		if err != nil {
			return nil, err
		}
		return remoteImage(rl), nil
	}
	_, view, meta, err := s.lookupView(name, opts.Platform)
	if err != nil {
		return nil, err
	}
	img := s.localImage(view, meta)
	for _, l := range img.Layers {
		if !img.Blobs.Local(l) {
			return nil, fmt.Errorf("image %s: layer %s is not in the store (ask with remote=1)%.0w", name, l.Digest, errdefs.ErrNotFound)
		}
	}
	return img, nil
}

// remoteImage is the image RemoteLayers resolved, as the contents room
// reads it (contentsImage, a diff's remote side).
func remoteImage(rl *distribution.RemoteLayers) *contents.Image {
	return &contents.Image{Manifest: rl.Manifest, Layers: rl.Layers, DiffIDs: rl.DiffIDs, Blobs: rl.Blobs}
}

// localImage is the stored platform image view (meta its manifest and
// config) as the contents room reads it, its layers from the store
// (contentsImage, a diff's local side).
func (s *Service) localImage(view *ImageRecord, meta *store.ImageMeta) *contents.Image {
	img := &contents.Image{Manifest: view.Manifest, Layers: meta.Manifest.Layers, Blobs: s.images.Blobs()}
	if meta.Config != nil {
		img.DiffIDs = meta.Config.RootFS.DiffIDs
	}
	return img
}
