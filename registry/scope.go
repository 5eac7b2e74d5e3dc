package registry

import (
	"context"

	"github.com/wharfproject/wharf/registry/transport"
)

// WithWriteScope makes ctx's requests to r's registry ask one token for
// pull and push on r, whatever they do: a caller that reads and then
// writes the repository (sync: HEAD the tag, then copy into it) fetches
// one token instead of a pull token and then a pull,push one. A token
// server grants what the identity may do, so an identity without push
// still reads.
func (r *Repository) WithWriteScope(ctx context.Context) context.Context {
	return transport.WithRepositoryScope(ctx, r.upstream.host, r.path, transport.ActionPull, transport.ActionPush)
}
