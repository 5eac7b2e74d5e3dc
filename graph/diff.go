package graph

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/contents"
	"github.com/wharfproject/wharf/graph/diff"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/imagespec"
)

// ImageDiff compares two images, each local, remote or an archive file,
// by the sections req asks for (graph/diff). The two sides are resolved at
// once: a remote diff is round trips in series otherwise, each side's
// manifest and config one after the other. When both fail, the From
// side's error is the answer, as it would be one side after the other:
// neither cancels the other.
func (s *Service) ImageDiff(ctx context.Context, req types.DiffRequest) (*types.ImageDiff, error) {
	sections, err := diff.Sections(req.Sections)
	if err != nil {
		return nil, err
	}
	judge := slices.Contains(sections, types.DiffSigner)
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	early := &diffEarly{start: func(a, b *contents.Image) { diff.Early(ectx, sections, s.contents, a, b) }}
	var a, b *diff.Side
	var errA, errB error
	var sides sync.WaitGroup
	sides.Go(func() { a, errA = s.diffSide(ctx, req.From, req, judge, early.side(0)) })
	sides.Go(func() { b, errB = s.diffSide(ctx, req.To, req, judge, early.side(1)) })
	sides.Wait()
	defer a.Close()
	defer b.Close()
	if err := cmp.Or(errA, errB); err != nil {
		return nil, err
	}
	return diff.Build(ctx, sections, a, b, diff.Rooms{Contents: s.contents, HasBlob: s.images.HasBlob})
}

// diffSide resolves one side: a local image as local inspect chooses it
// (its verdict the one it was pulled under), or a remote one as remote
// inspect does (its verdict the policy's now, when judge), or the one
// image of an archive file on the daemon's host, read in place (no
// verdict).
func (s *Service) diffSide(ctx context.Context, side types.DiffSide, req types.DiffRequest, judge bool, early func(*contents.Image)) (*diff.Side, error) {
	d := &diff.Side{Name: types.DiffImage{Kind: side.Kind, Name: side.Name}}
	var cfg *store.ImageConfig
	switch side.Kind {
	case types.SideLocal:
		rec, view, meta, err := s.lookupView(side.Name, req.Platform)
		if err != nil {
			return nil, err
		}
		d.Image = s.localImage(view, meta)
		cfg, d.ConfigDesc, d.Trust = meta.Config, meta.Manifest.Config, rec.Trust
	case types.SideRemote:
		opts := types.FilesOptions{Remote: true, Platform: req.Platform, Auth: req.Auth, Registries: req.Registries, MetaHeaders: req.MetaHeaders}
		rl, err := s.dist.RemoteLayersWith(ctx, side.Name, opts, distribution.RemoteOptions{
			Judge: judge,
			Early: func(rl *distribution.RemoteLayers) { early(remoteImage(rl)) },
		})
		if err != nil {
			return nil, err
		}
		d.Image = remoteImage(rl)
		cfg, d.ConfigDesc, d.Trust = rl.Config, rl.ConfigDescriptor, rl.Trust
	case types.SideArchive:
		fi, err := s.archive.OpenImage(ctx, side.Name, req.Platform)
		if err != nil {
			return nil, err
		}
		if cfg, err = store.ParseImageConfig(fi.Config); err != nil {
			fi.Close()
			return nil, fmt.Errorf("archive %s: config: %w", side.Name, err)
		}
		d.Image = &contents.Image{Manifest: fi.Manifest, Layers: fi.Layers, Blobs: fi.Blobs}
		d.ConfigDesc, d.Closer = fi.ConfigDescriptor, fi.Close
	default:
		return nil, fmt.Errorf("diff side %q: want local, remote or archive%.0w", side.Kind, errdefs.ErrInvalidArgument)
	}
	if cfg == nil {
		cfg = &store.ImageConfig{}
	}
	if d.Image.DiffIDs == nil {
		d.Image.DiffIDs = cfg.RootFS.DiffIDs
	}
	// Docker's config type shadows the embedded ocispec.Image's Config
	// with its own (the JSON decodes into that one): copied over.
	oci := cfg.Image
	oci.Config = cfg.Config.ImageConfig
	d.Config = &oci
	early(d.Image) // once only: a remote side's call from its manifest came first
	d.Name.Digest = d.Image.Manifest.Digest.String()
	if p := cfg.Platform; p.OS != "" {
		d.Name.Platform = imagespec.FormatPlatform(p)
	}
	return d, nil
}

// diffEarly hands both sides' layers to start once each side has told
// its own: a remote side as soon as its manifest is read, the others once
// resolved (diff.Early).
type diffEarly struct {
	mu    sync.Mutex
	imgs  [2]*contents.Image
	start func(a, b *contents.Image)
	done  bool
}

// side is what side i tells; later calls for one side are ignored.
func (e *diffEarly) side(i int) func(*contents.Image) {
	return func(img *contents.Image) {
		e.mu.Lock()
		if e.imgs[i] == nil {
			e.imgs[i] = img
		}
		ready := !e.done && e.imgs[0] != nil && e.imgs[1] != nil
		e.done = e.done || ready
		a, b := e.imgs[0], e.imgs[1]
		e.mu.Unlock()
		if ready {
			e.start(a, b)
		}
	}
}
