package registry

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/wharfproject/wharf/registry/transport"
)

// The catalog (GET /v2/_catalog, distribution's extension, which the OCI
// distribution-spec leaves out but distribution, Harbor, Zot and most
// private registries serve) lists a registry's repositories: sync takes a
// namespace from it. It is paged like the tag list and bounded by the same
// numbers (a repository name is a tag-sized string of up to 255 bytes).
const catalogScope = "registry:catalog:*"

// Catalog lists the repositories whose path starts with prefix + "/" (every
// repository for ""), asking the registry r is on — its upstream, never a
// mirror, whose catalog is what it cached. A name that is not a valid
// repository path fails the listing (ErrUpstream). A registry without the
// catalog answers 404 or 401 and the error keeps that class.
func (r *Repository) Catalog(ctx context.Context, prefix string) ([]string, error) {
	ep := r.upstream
	ctx = transport.WithScopes(ctx, ep.host, catalogScope)
	u, err := url.Parse(ep.baseURL() + "/v2/_catalog?n=" + strconv.Itoa(TagPageSize))
	if err != nil {
		return nil, err
	}
	var names []string
	var held int64
	lim := r.svc.listLimit.orDefault()
	b := pageBounds{what: "catalog", maxPages: maxTagPages, maxPage: maxTagPageBytes, maxTotal: maxTagListBytes}
	err = r.getPages(ctx, ep, u, "application/json", b, func(_ *http.Response, body []byte) error {
		var page struct {
			Repositories []string `json:"repositories"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return invalidDocument(ep.host, "catalog: %v", err)
		}
		if len(names)+len(page.Repositories) > lim.names {
			return invalidDocument(ep.host, "catalog: more than %d repositories", lim.names)
		}
		for _, n := range page.Repositories {
			if validateRepositoryPath(n) != nil {
				return invalidDocument(ep.host, "catalog: invalid repository %q", n)
			}
			if held += int64(len(n)) + tagHeaderBytes; held > lim.memory {
				return invalidDocument(ep.host, "catalog: its names take more than %d bytes in memory", lim.memory)
			}
			if prefix == "" || strings.HasPrefix(n, prefix+"/") {
				names = append(names, n)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}
