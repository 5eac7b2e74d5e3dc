package distribution

import (
	"context"
	"slices"

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
