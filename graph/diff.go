package graph

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/contents"
	"github.com/wharfproject/wharf/graph/diff"
	"github.com/wharfproject/wharf/graph/store"
)

// ImageDiff compares two images, each local, remote or an archive file, by the sections
// req asks for (graph/diff). Each side is resolved once; a section that
// fails (the files of a layer that cannot be read, the packages) is named
// in Errors and the others stand.
func (s *Service) ImageDiff(ctx context.Context, req types.DiffRequest) (*types.ImageDiff, error) {
	sections, err := diffSections(req.Sections)
	if err != nil {
		return nil, err
	}
	judge := slices.Contains(sections, types.DiffSigner)
	// The two sides are resolved at once, and the files and packages
	// sections (each reads layers) run beside each other: a remote diff is
	// round trips in series otherwise, each side's manifest and config one
	// after the other.
	// When both sides fail, the From side's error is the answer, as it
	// would be one side after the other: neither cancels the other.
	var a, b *diffImage
	var errA, errB error
	var sides sync.WaitGroup
	sides.Go(func() { a, errA = s.diffSide(ctx, req.From, req, judge) })
	sides.Go(func() { b, errB = s.diffSide(ctx, req.To, req, judge) })
	sides.Wait()
	if a != nil {
		defer a.close()
	}
	if b != nil {
		defer b.close()
	}
	if err := cmp.Or(errA, errB); err != nil {
		return nil, err
	}
	out := &types.ImageDiff{From: a.name, To: b.name}
	var mu sync.Mutex
	fail := func(section string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if out.Errors == nil {
			out.Errors = map[string]string{}
		}
		out.Errors[section] = err.Error()
	}
	var reads sync.WaitGroup
	for _, sec := range sections {
		switch sec {
		case types.DiffConfig:
			out.Config = diff.Config(a.oci(), b.oci())
		case types.DiffLayers:
			out.Layers = diff.Layers(a.img.Layers, b.img.Layers)
		case types.DiffPull:
			out.Pull = diff.PullCost(b.img.Layers, b.cfgDesc, s.images.HasBlob)
			out.Pull.Image, out.Pull.Digest = b.name.Name, b.name.Digest
		case types.DiffFiles:
			reads.Go(func() {
				files, err := s.filesDiff(ctx, a, b)
				if err != nil {
					fail(sec, err)
					return
				}
				out.Files = files
			})
		case types.DiffPackages:
			reads.Go(func() {
				pk, err := s.packagesDiff(ctx, a, b)
				if err != nil {
					fail(sec, err)
					return
				}
				out.Packages = pk
			})
		case types.DiffSource:
			out.Source = diff.Source(a.cfg.Config.Labels, b.cfg.Config.Labels)
		case types.DiffSigner:
			out.Signer = diff.Signer(a.trust, b.trust)
		}
	}
	reads.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// diffSections are the sections asked for, in DiffSections' order; none
// is all of them.
func diffSections(asked []string) ([]string, error) {
	if len(asked) == 0 {
		return types.DiffSections, nil
	}
	for _, sec := range asked {
		if !slices.Contains(types.DiffSections, sec) {
			return nil, fmt.Errorf("unknown diff section %q (want some of %v)%.0w", sec, types.DiffSections, errdefs.ErrInvalidArgument)
		}
	}
	var out []string
	for _, sec := range types.DiffSections {
		if slices.Contains(asked, sec) {
			out = append(out, sec)
		}
	}
	return out, nil
}

// diffImage is one side of a diff, resolved.
type diffImage struct {
	name    types.DiffImage
	img     *contents.Image
	cfg     *store.ImageConfig
	cfgDesc ocispec.Descriptor
	trust   *types.Trust
	closer  func() error // an archive side's file
}

func (d *diffImage) close() {
	if d.closer != nil {
		_ = d.closer()
	}
}

// oci is the side's config as the OCI spec types it. Docker's config type
// shadows the embedded ocispec.Image's Config with its own (the JSON
// decodes into that one), so the runtime config is copied over.
func (d *diffImage) oci() *ocispec.Image {
	img := d.cfg.Image
	img.Config = d.cfg.Config.ImageConfig
	return &img
}

// diffSide resolves one side: a local image as local inspect chooses it
// (its verdict the one it was pulled under), or a remote one as remote
// inspect does (its verdict the policy's now, when judge), or the one
// image of an archive file on the daemon's host, read in place (no
// verdict).
func (s *Service) diffSide(ctx context.Context, side types.DiffSide, req types.DiffRequest, judge bool) (*diffImage, error) {
	d := &diffImage{name: types.DiffImage{Kind: side.Kind, Name: side.Name}}
	switch side.Kind {
	case types.SideLocal:
		rec, view, meta, err := s.lookupView(side.Name, req.Platform)
		if err != nil {
			return nil, err
		}
		d.img = &contents.Image{Manifest: view.Manifest, Layers: meta.Manifest.Layers, Blobs: &storeBlobs{s: s}}
		d.cfg, d.cfgDesc, d.trust = meta.Config, meta.Manifest.Config, rec.Trust
	case types.SideRemote:
		opts := types.FilesOptions{Remote: true, Platform: req.Platform, Auth: req.Auth, Registries: req.Registries, MetaHeaders: req.MetaHeaders}
		resolve := s.dist.RemoteLayers
		if judge {
			resolve = s.dist.RemoteJudged
		}
		rl, err := resolve(ctx, side.Name, opts)
		if err != nil {
			return nil, err
		}
		d.img = &contents.Image{Manifest: rl.Manifest, Layers: rl.Layers, DiffIDs: rl.DiffIDs, Blobs: rl.Blobs}
		d.cfg, d.cfgDesc, d.trust = rl.Config, rl.ConfigDescriptor, rl.Trust
	case types.SideArchive:
		fi, err := s.archive.OpenImage(ctx, side.Name, req.Platform)
		if err != nil {
			return nil, err
		}
		cfg, err := store.ParseImageConfig(fi.Config)
		if err != nil {
			fi.Close()
			return nil, fmt.Errorf("archive %s: config: %w", side.Name, err)
		}
		d.img = &contents.Image{Manifest: fi.Manifest, Layers: fi.Layers, Blobs: fi.Blobs}
		d.cfg, d.cfgDesc, d.closer = cfg, fi.ConfigDescriptor, fi.Close
	default:
		return nil, fmt.Errorf("diff side %q: want local, remote or archive%.0w", side.Kind, errdefs.ErrInvalidArgument)
	}
	if d.cfg == nil {
		d.cfg = &store.ImageConfig{}
	}
	if d.img.DiffIDs == nil {
		d.img.DiffIDs = d.cfg.RootFS.DiffIDs
	}
	d.name.Digest = d.img.Manifest.Digest.String()
	if p := d.cfg.Platform; p.OS != "" {
		d.name.Platform = p.OS + "/" + p.Architecture
		if p.Variant != "" {
			d.name.Platform += "/" + p.Variant
		}
	}
	return d, nil
}

// filesDiff indexes the layers above the shared prefix on each side, and
// uses the shared layers' indexes only when every one is already held.
func (s *Service) filesDiff(ctx context.Context, a, b *diffImage) (*types.FilesDiff, error) {
	k := diff.SharedPrefix(a.img.Layers, b.img.Layers)
	from, to, err := s.contents.LayerIndexesOfTwo(ctx, a.img, b.img, k)
	if err != nil {
		return nil, err
	}
	shared, ok := s.contents.CachedLayerIndexes(a.img, k)
	if !ok {
		shared, ok = s.contents.CachedLayerIndexes(b.img, k)
	}
	if !ok {
		shared = nil
	}
	return diff.Files(ctx, shared, from, to)
}
