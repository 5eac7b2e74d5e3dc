package registry

import (
	"context"
	"time"

	"github.com/wharfproject/wharf/registry/listing"
)

// Tag listing and the catalog are registry/listing's (Link pagination,
// bounded in pages, bytes and memory); this file picks the endpoints.

// TagPageSize is the n= of every tag-list request unless the caller asks
// for another (listing.TagPageSize).
const TagPageSize = listing.TagPageSize

// MaxTagPageSize bounds a page size asked for through the API.
const MaxTagPageSize = listing.MaxTagPageSize

// TagsOptions shape one tag listing.
type TagsOptions = listing.TagsOptions

// TagListing is a repository's whole tag listing.
type TagListing = listing.TagListing

// Tags lists the repository's tags in the registry's order, from the
// first endpoint that may resolve and answers (listing.Tags).
func (r *Repository) Tags(ctx context.Context, opts TagsOptions) ([]string, error) {
	var tags []string
	err := r.resolveEach(ctx, func(ep *repoEndpoint) error {
		var err error
		tags, err = listing.Tags(ctx, target{r, ep}, opts, r.svc.listLimit)
		return err
	})
	if err != nil {
		return nil, err
	}
	return tags, nil
}

// TagListing lists every tag of the repository (Tags, in the registry's
// order) and remembers the listing under the repository's scope; with
// maxAge > 0 a listing this scope got less than maxAge ago is returned
// with no request at all (listing.Whole). The caller must not modify
// Tags.
func (r *Repository) TagListing(ctx context.Context, maxAge time.Duration) (TagListing, error) {
	return listing.Whole(ctx, r.scope(), maxAge, func(ctx context.Context) ([]string, error) {
		return r.Tags(ctx, TagsOptions{})
	})
}
