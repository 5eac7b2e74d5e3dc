package distribution

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/imageref"
	"github.com/wharfproject/wharf/registry"
)

// Tag orders of RemoteTags.
const (
	// TagSortRegistry keeps the registry's order (distribution's is lexical).
	TagSortRegistry = ""
	// TagSortSemver sorts semver-aware: see SortTagsSemver.
	TagSortSemver = "semver"
)

// RemoteTags lists the tags of the repository name names, searching short
// names as a pull does (GET /wharf/images/{name}/tags, wharf tags). A tag or
// digest in name is ignored. In the registry's order, Limit stops the
// listing early (no further page is asked for); sorted, every tag is read
// (within the listing's bounds), sorted, then cut at Limit.
func (s *Service) RemoteTags(ctx context.Context, name string, opts types.RemoteTagsOptions) (*types.RemoteTags, error) {
	switch {
	case opts.Sort != TagSortRegistry && opts.Sort != TagSortSemver:
		return nil, fmt.Errorf("invalid sort %q: want semver or nothing (the registry's order)%.0w", opts.Sort, errdefs.ErrInvalidArgument)
	case opts.Limit < 0:
		return nil, fmt.Errorf("invalid limit %d%.0w", opts.Limit, errdefs.ErrInvalidArgument)
	case opts.PageSize < 0 || opts.PageSize > registry.MaxTagPageSize:
		return nil, fmt.Errorf("invalid page size %d: want 1 to %d%.0w", opts.PageSize, registry.MaxTagPageSize, errdefs.ErrInvalidArgument)
	}
	tn, err := splitTypedName(name)
	if err != nil {
		return nil, err
	}
	svc, err := s.registryService()
	if err != nil {
		return nil, err
	}
	lo := registry.TagsOptions{PageSize: opts.PageSize}
	if opts.Sort == TagSortRegistry {
		lo.Limit = opts.Limit
	}
	ref, err := imageref.Parse(tn.Repo)
	if err != nil {
		return nil, err
	}
	repo, tags, err := svc.ListTags(ctx, ref, credentials(opts.Auth, opts.Registries, opts.MetaHeaders), lo)
	if err != nil {
		return nil, err
	}
	if opts.Sort == TagSortSemver {
		SortTagsSemver(tags)
		if opts.Limit > 0 && len(tags) > opts.Limit {
			tags = tags[:opts.Limit]
		}
	}
	info := repo.Info()
	return &types.RemoteTags{Registry: info.Index.Name, Name: reference.FamiliarName(info.Name), Tags: tags}, nil
}
