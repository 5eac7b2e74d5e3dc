package registry

import (
	"context"

	"github.com/wharfproject/wharf/registry/listing"
)

// Catalog lists the repositories whose path starts with prefix + "/"
// (every repository for ""), asking the registry r is on — its upstream,
// never a mirror, whose catalog is what it cached (listing.Catalog). A
// name that is not a valid repository path fails the listing
// (ErrUpstream).
func (r *Repository) Catalog(ctx context.Context, prefix string) ([]string, error) {
	return listing.Catalog(ctx, target{r, r.upstream}, prefix, r.svc.listLimit, validateRepositoryPath)
}
