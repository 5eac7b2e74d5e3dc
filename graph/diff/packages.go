package diff

import (
	"context"

	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/contents"
	"github.com/wharfproject/wharf/graph/packages"
	"github.com/wharfproject/wharf/internal/pair"
)

// packagesOf compares the two sides' packages reading no byte of the
// layers they share when it can: the packages each side's upper layers
// (those above the shared prefix) hold are read from those layers alone,
// since whatever the shared layers hold is the same on both sides. That is
// exact unless a package's evidence (a database file, a binary) lies in
// one side's upper layers and not in the other's: then the other side's
// answer lies in the shared layers, and both whole images are read.
func packagesOf(ctx context.Context, room *contents.Room, a, b *contents.Image) (*types.PackagesDiff, error) {
	k := SharedPrefix(a.Layers, b.Layers)
	if k > 0 {
		ua, ub := upperImage(a, k), upperImage(b, k)
		var pa, pb *types.ImagePackages
		var na, nb map[string]bool
		err := pair.Both(ctx, func(ctx context.Context) (err error) {
			if pa, err = packages.OfImage(ctx, room, ua); err == nil {
				na, err = namedPaths(ctx, room, ua)
			}
			return err
		}, func(ctx context.Context) (err error) {
			if pb, err = packages.OfImage(ctx, room, ub); err == nil {
				nb, err = namedPaths(ctx, room, ub)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if sameEvidence(pa.Packages, na, nb) && sameEvidence(pb.Packages, na, nb) {
			return packages.Compare(pa.Packages, pb.Packages), nil
		}
	}
	var pa, pb *types.ImagePackages
	err := pair.Both(ctx, func(ctx context.Context) (err error) {
		pa, err = packages.OfImage(ctx, room, a)
		return err
	}, func(ctx context.Context) (err error) {
		pb, err = packages.OfImage(ctx, room, b)
		return err
	})
	if err != nil {
		return nil, err
	}
	return packages.Compare(pa.Packages, pb.Packages), nil
}

// upperImage is img without its bottom k layers: its own manifest key, so
// that the contents room keeps its merged view apart from the image's.
func upperImage(img *contents.Image, k int) *contents.Image {
	u := &contents.Image{Manifest: img.Manifest, Layers: img.Layers[k:], Blobs: img.Blobs}
	if len(img.DiffIDs) == len(img.Layers) {
		u.DiffIDs = img.DiffIDs[k:]
	}
	u.Manifest.Digest = digest.FromString("upper layers of " + img.Manifest.Digest.String() + " above " + img.Layers[k-1].Digest.String())
	return u
}

// namedPaths are the paths img's layers name (whiteouts too: a path one
// side removes is one it names).
func namedPaths(ctx context.Context, room *contents.Room, img *contents.Image) (map[string]bool, error) {
	ixs, err := room.LayerIndexes(ctx, img, 0)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, ix := range ixs {
		for i := range ix.Entries {
			e := &ix.Entries[i]
			if _, p := e.Whiteout(); p != "" {
				named[p] = true
				continue
			}
			named[e.Path] = true
		}
	}
	return named, nil
}

// sameEvidence reports whether every location of pkgs is named by both
// sides' upper layers or by neither.
func sameEvidence(pkgs []types.Package, a, b map[string]bool) bool {
	for _, p := range pkgs {
		for _, l := range p.Locations {
			if a[l] != b[l] {
				return false
			}
		}
	}
	return true
}
