package diff

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/contents"
	"github.com/wharfproject/wharf/graph/packages"
)

// Side is one side of a diff as the image service resolved it: its layers
// as the contents room reads them, its config (the runtime config Docker
// shadows copied in), and its verdict when the signer section asked.
type Side struct {
	Name       types.DiffImage
	Image      *contents.Image
	Config     *ocispec.Image
	ConfigDesc ocispec.Descriptor
	Trust      *types.Trust
	Closer     func() error // an archive side's file
}

// Close releases what the side holds open; a nil side holds nothing.
func (s *Side) Close() {
	if s != nil && s.Closer != nil {
		_ = s.Closer()
	}
}

// Rooms are what a diff reads through: the layer indexes, and the store's
// blob presence for the pull section.
type Rooms struct {
	Contents *contents.Room
	HasBlob  func(digest.Digest) bool
}

// Sections are the sections asked for, in DiffSections' order; none is
// all of them.
func Sections(asked []string) ([]string, error) {
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

// Build compares a and b by sections. A section that fails (the files of
// a layer that cannot be read, the packages) is named in Errors and the
// others stand. The files and packages sections, which read layers, run
// beside each other.
func Build(ctx context.Context, sections []string, a, b *Side, r Rooms) (*types.ImageDiff, error) {
	out := &types.ImageDiff{From: a.Name, To: b.Name}
	var mu sync.Mutex
	fail := func(section string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if out.Errors == nil {
			out.Errors = map[string]string{}
		}
		out.Errors[section] = err.Error()
	}
	if slices.Contains(sections, types.DiffPackages) {
		// The files section's builds of the upper layers keep what the
		// package lists read next.
		a, b = wantingPackages(a), wantingPackages(b)
	}
	var reads sync.WaitGroup
	for _, sec := range sections {
		switch sec {
		case types.DiffConfig:
			out.Config = Config(a.Config, b.Config)
		case types.DiffLayers:
			out.Layers = Layers(a.Image.Layers, b.Image.Layers)
		case types.DiffPull:
			out.Pull = PullCost(b.Image.Layers, b.ConfigDesc, r.HasBlob)
			out.Pull.Image, out.Pull.Digest = b.Name.Name, b.Name.Digest
		case types.DiffFiles:
			reads.Go(func() {
				files, err := filesOf(ctx, r.Contents, a.Image, b.Image)
				if err != nil {
					fail(sec, err)
					return
				}
				out.Files = files
			})
		case types.DiffPackages:
			reads.Go(func() {
				pk, err := packagesOf(ctx, r.Contents, a.Image, b.Image)
				if err != nil {
					fail(sec, err)
					return
				}
				out.Packages = pk
			})
		case types.DiffSource:
			out.Source = Source(a.Config.Config.Labels, b.Config.Config.Labels)
		case types.DiffSigner:
			out.Signer = Signer(a.Trust, b.Trust)
		}
	}
	reads.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Early starts, from the two sides' layers alone (their configs may still
// be on the way), the index builds that Build's files and packages
// sections read first: the layers above the shared prefix, keeping the
// files a package list reads when that section is asked. Build joins the
// builds in flight. It returns at once; ctx ends them when no one else
// waits on them.
func Early(ctx context.Context, sections []string, room *contents.Room, a, b *contents.Image) {
	files, pkgs := slices.Contains(sections, types.DiffFiles), slices.Contains(sections, types.DiffPackages)
	if !files && !pkgs {
		return
	}
	if pkgs {
		a, b = a.Wanting(packages.Wanted), b.Wanting(packages.Wanted)
	}
	k := SharedPrefix(a.Layers, b.Layers)
	go func() { _, _, _ = room.LayerIndexesOfTwo(ctx, a, b, k) }()
}

// filesOf indexes the layers above the shared prefix on each side, and
// uses the shared layers' indexes only when every one is already held.
func filesOf(ctx context.Context, room *contents.Room, a, b *contents.Image) (*types.FilesDiff, error) {
	k := SharedPrefix(a.Layers, b.Layers)
	from, to, err := room.LayerIndexesOfTwo(ctx, a, b, k)
	if err != nil {
		return nil, err
	}
	shared, ok := room.CachedLayerIndexes(a, k)
	if !ok {
		shared, ok = room.CachedLayerIndexes(b, k)
	}
	if !ok {
		shared = nil
	}
	return Files(ctx, shared, from, to)
}

// wantingPackages is s whose image wants the files a package list reads.
func wantingPackages(s *Side) *Side {
	c := *s
	c.Image = s.Image.Wanting(packages.Wanted)
	return &c
}
