package listing

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

// Catalog lists the repositories whose path starts with prefix + "/"
// (every repository for ""), asking the registry t is on — its upstream,
// never a mirror, whose catalog is what it cached. A name that valid
// refuses (the repository-path grammar) fails the listing (ErrUpstream).
// A registry without the catalog answers 404 or 401 and the error keeps
// that class.
func Catalog(ctx context.Context, t Target, prefix string, lim Limit, valid func(path string) error) ([]string, error) {
	host := t.Host()
	ctx = transport.WithScopes(ctx, host, catalogScope)
	u, err := url.Parse(t.BaseURL() + "/v2/_catalog?n=" + strconv.Itoa(TagPageSize))
	if err != nil {
		return nil, err
	}
	var names []string
	var held int64
	lim = lim.orDefault()
	b := Bounds{What: "catalog", MaxPages: maxTagPages, MaxPage: maxTagPageBytes, MaxTotal: maxTagListBytes}
	err = Pages(ctx, t, u, "application/json", b, func(_ *http.Response, body []byte) error {
		var page struct {
			Repositories []string `json:"repositories"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return transport.InvalidDocument(host, "catalog: %v", err)
		}
		if len(names)+len(page.Repositories) > lim.Names {
			return transport.InvalidDocument(host, "catalog: more than %d repositories", lim.Names)
		}
		for _, n := range page.Repositories {
			if valid(n) != nil {
				return transport.InvalidDocument(host, "catalog: invalid repository %q", n)
			}
			if held += int64(len(n)) + tagHeaderBytes; held > lim.Memory {
				return transport.InvalidDocument(host, "catalog: its names take more than %d bytes in memory", lim.Memory)
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
