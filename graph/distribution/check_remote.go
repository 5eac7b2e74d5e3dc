package distribution

// The update check's registry side: what a local tag names in its
// registry now, the repository's tag listing, and what a base names now.
// graph/updates decides with these answers.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry"
)

// RemoteTag is what a tag names in its registry now, as the update check
// reads it.
type RemoteTag struct {
	// Descriptor is the top level the tag names: digest, media type (as
	// served) and size when known.
	Descriptor ocispec.Descriptor
	// Cached: no request was made (the answer was younger than the
	// max-age asked for).
	Cached bool
	// IsIndex: the top level is an index (by its media type, or by its
	// content when that was read).
	IsIndex bool
	// Index is the index's content when it was read (nil: not read).
	Index *ocispec.Index
	// IndexErr is why the index could not be read; the tag's answer
	// stands without it.
	IndexErr error

	// repo is the repository that was asked, its credentials bound once:
	// JudgeTag reads the signatures through it.
	repo *registry.Repository
}

// Repository is the repository that answered (nil for a RemoteTag not
// made by LookupRemoteTag).
func (t RemoteTag) Repository() *registry.Repository { return t.repo }

// LookupRemoteTag asks ref's registry what ref's tag names now (the update
// check): one HEAD, or nothing when the tag freshness cache holds an answer
// younger than opts.MaxAge for this repository and identity. ref is a local
// tag, fully qualified: no candidate search, the registry it names is the
// one asked, and credentials go there only when they belong to it.
//
// When the tag names none of known (the digests the image was pulled or
// pushed under) and its top level is an index, or the HEAD did not type
// it, the index is read too, by digest (from the content cache when this
// repository and identity read it), so that the caller can tell whether
// the platform it pulled moved.
func (s *Service) LookupRemoteTag(ctx context.Context, ref reference.NamedTagged, known []digest.Digest, opts types.RemoteCheckOptions) (RemoteTag, error) {
	repo, err := s.checkRepository(ctx, ref, opts)
	if err != nil {
		return RemoteTag{}, err
	}
	ans, err := repo.HeadTag(ctx, ref.Tag(), opts.MaxAge)
	if err != nil {
		return RemoteTag{}, err
	}
	out := RemoteTag{Descriptor: ans.Descriptor, Cached: ans.Cached, IsIndex: imagespec.IsIndex(ans.Descriptor.MediaType), repo: repo}
	if slices.Contains(known, ans.Descriptor.Digest) || (!out.IsIndex && ans.Descriptor.MediaType != "") {
		return out, nil
	}
	res, err := repo.FetchTop(ctx, ans.Descriptor.Digest.String())
	if err != nil {
		out.IndexErr = err
		return out, nil
	}
	out.Index, out.IsIndex = res.Index, res.Index != nil
	return out, nil
}

// checkRepository is the repository of name as the update check reads it:
// each registry gets the credential set keyed by it (registry/credentials.go).
func (s *Service) checkRepository(ctx context.Context, name reference.Named, opts types.RemoteCheckOptions) (*registry.Repository, error) {
	svc, err := s.registryService()
	if err != nil {
		return nil, err
	}
	return svc.Repository(ctx, reference.TrimNamed(name), registry.Credentials{Registries: opts.Auth, MetaHeaders: opts.MetaHeaders})
}

// TagListing is the whole tag listing of ref's repository, as the update
// check reads it (ref is a local tag, fully qualified: no candidate
// search): one listing walk, or none within opts.MaxAge
// (registry.TagListing). The caller must not modify its Tags.
func (s *Service) TagListing(ctx context.Context, ref reference.Named, opts types.RemoteCheckOptions) (registry.TagListing, error) {
	repo, err := s.checkRepository(ctx, ref, opts)
	if err != nil {
		return registry.TagListing{}, err
	}
	return repo.TagListing(ctx, opts.MaxAge)
}

// BaseAnswer is what an image's base names now, compared with what the
// image was built on.
type BaseAnswer struct {
	// Status is types.BaseCurrent or types.BaseOutdated.
	Status string
	// Current is the top level the base name names now; CurrentPlatform,
	// for an index, its manifest for Platform.
	Current, CurrentPlatform digest.Digest
	Cached                   bool
}

// CheckBase asks what baseName (org.opencontainers.image.base.name) names
// now and compares it with baseDigest (.base.digest), for platform: one
// HEAD (none within opts.MaxAge, the tag freshness cache), plus the index
// when the base is one (from the content cache when read before), plus —
// only when neither digest matches and the old digest may be an index —
// the old top level by digest, to tell whether only other platforms moved.
//
// The base is current when the old digest is the current top level, or
// the current manifest for platform, or an old index whose manifest for
// platform is the current one (another platform changed: not an alarm).
// A base name with a digest and no tag pins it: always current.
func (s *Service) CheckBase(ctx context.Context, baseName string, baseDigest digest.Digest, platform ocispec.Platform, opts types.RemoteCheckOptions) (BaseAnswer, error) {
	named, err := reference.ParseNormalizedNamed(baseName)
	if err != nil {
		return BaseAnswer{}, fmt.Errorf("base name %q: %v%.0w", baseName, err, errdefs.ErrInvalidArgument)
	}
	if err := baseDigest.Validate(); err != nil {
		return BaseAnswer{}, fmt.Errorf("base digest %q: %v%.0w", baseDigest, err, errdefs.ErrInvalidArgument)
	}
	if c, ok := named.(reference.Canonical); ok {
		if _, tagged := named.(reference.Tagged); !tagged {
			st := types.BaseCurrent
			if c.Digest() != baseDigest {
				st = types.BaseOutdated
			}
			return BaseAnswer{Status: st, Current: c.Digest(), Cached: true}, nil
		}
	}
	tagged, ok := reference.TagNameOnly(named).(reference.NamedTagged)
	if !ok {
		return BaseAnswer{}, fmt.Errorf("base name %q has no tag%.0w", baseName, errdefs.ErrInvalidArgument)
	}
	repo, err := s.checkRepository(ctx, tagged, opts)
	if err != nil {
		return BaseAnswer{}, err
	}
	ans, err := repo.HeadTag(ctx, tagged.Tag(), opts.MaxAge)
	if err != nil {
		return BaseAnswer{}, err
	}
	out := BaseAnswer{Current: ans.Descriptor.Digest, Cached: ans.Cached, Status: types.BaseOutdated}
	if out.Current == baseDigest {
		out.Status = types.BaseCurrent
		return out, nil
	}
	// The current top level's manifest for platform.
	if imagespec.IsIndex(ans.Descriptor.MediaType) || ans.Descriptor.MediaType == "" {
		top, err := repo.FetchTop(ctx, out.Current.String())
		if err != nil {
			return out, fmt.Errorf("reading the base's index: %w", err)
		}
		if top.Index != nil {
			m, err := imagespec.SelectManifest(top.Index, platform)
			if err != nil {
				return out, fmt.Errorf("the base's index: %w", err)
			}
			out.CurrentPlatform = m.Digest
		}
	}
	cur := out.Current
	if out.CurrentPlatform != "" {
		cur = out.CurrentPlatform
	}
	if cur == baseDigest {
		out.Status = types.BaseCurrent
		return out, nil
	}
	// The old digest may be an old index whose platform did not move.
	old, err := repo.FetchTop(ctx, baseDigest.String())
	if err != nil || old.Index == nil {
		return out, nil // gone, or a manifest: it moved
	}
	if m, err := imagespec.SelectManifest(old.Index, platform); err == nil && m.Digest == cur {
		out.Status = types.BaseCurrent
	}
	return out, nil
}

// CheckBaseLayers is the base check without annotations (regctl's
// method): baseName, which the user names, is asked what it names now
// (one HEAD, none within opts.MaxAge; its index and platform manifest
// from the content cache when read before), and the base is current when
// the image's layers begin with the base's current layers for platform
// (compressed digests, as the registry serves them), outdated otherwise.
func (s *Service) CheckBaseLayers(ctx context.Context, baseName string, platform ocispec.Platform, layers []digest.Digest, opts types.RemoteCheckOptions) (BaseAnswer, error) {
	named, err := reference.ParseNormalizedNamed(baseName)
	if err != nil {
		return BaseAnswer{}, fmt.Errorf("base name %q: %v%.0w", baseName, err, errdefs.ErrInvalidArgument)
	}
	repo, err := s.checkRepository(ctx, named, opts)
	if err != nil {
		return BaseAnswer{}, err
	}
	var out BaseAnswer
	if c, ok := named.(reference.Canonical); ok {
		out.Current = c.Digest()
	} else {
		tagged, ok := reference.TagNameOnly(named).(reference.NamedTagged)
		if !ok {
			return BaseAnswer{}, fmt.Errorf("base name %q has no tag%.0w", baseName, errdefs.ErrInvalidArgument)
		}
		ans, err := repo.HeadTag(ctx, tagged.Tag(), opts.MaxAge)
		if err != nil {
			return BaseAnswer{}, err
		}
		out.Current, out.Cached = ans.Descriptor.Digest, ans.Cached
	}
	top, err := repo.FetchTop(ctx, out.Current.String())
	if err != nil {
		return out, fmt.Errorf("reading the base: %w", err)
	}
	raw := top.Raw
	if top.Index != nil {
		m, err := imagespec.SelectManifest(top.Index, platform)
		if err != nil {
			return out, fmt.Errorf("the base's index: %w", err)
		}
		out.CurrentPlatform = m.Digest
		pm, err := repo.FetchTop(ctx, m.Digest.String())
		if err != nil {
			return out, fmt.Errorf("reading the base's manifest for %s: %w", imagespec.FormatPlatform(platform), err)
		}
		raw = pm.Raw
	}
	var mf ocispec.Manifest
	if err := json.Unmarshal(raw, &mf); err != nil || len(mf.Layers) == 0 {
		return out, fmt.Errorf("the base's manifest has no layers to compare%.0w", errdefs.ErrInvalidArgument)
	}
	out.Status = types.BaseOutdated
	if len(mf.Layers) <= len(layers) {
		out.Status = types.BaseCurrent
		for i, l := range mf.Layers {
			if l.Digest != layers[i] {
				out.Status = types.BaseOutdated
				break
			}
		}
	}
	return out, nil
}
