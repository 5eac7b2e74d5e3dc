package registry

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// Tag listing (GET /v2/<name>/tags/list, distribution-spec "listing tags"):
// the daemon asks for TagPageSize tags a page (n=) and follows the Link
// header, carrying last= as the registry wrote it. A registry may return
// fewer than n and link on; distribution without n returns every tag in
// one answer, with n pages of n.
const (
	// TagPageSize is the n= of every tag-list request unless the caller
	// asks for another: 1,000, as go-containerregistry sends and ECR
	// allows at most; a repository of 1,000 tags costs one request.
	TagPageSize = 1000
	// MaxTagPageSize bounds a page size asked for through the API.
	MaxTagPageSize = 10_000
	// maxTagPages and maxTagListBytes bound one listing: a registry drives
	// pagination, so a hostile or broken one could page forever. 1,000
	// pages hold 1,000,000 tags at the default page size, and 64 MiB some
	// 2,000,000 tags of a usual length: far beyond any real repository.
	maxTagPages     = 1000
	maxTagListBytes = 64 << 20
	// maxTagPageBytes caps one page: 4 MiB, as a manifest.
	maxTagPageBytes = maxManifestSize
)

// TagsOptions shape one tag listing.
type TagsOptions struct {
	// PageSize is the n= of each request; 0 means TagPageSize.
	PageSize int
	// Limit stops the listing once this many tags are read (no further
	// page is requested); 0 means all.
	Limit int
}

// Tags lists the repository's tags in the registry's order (distribution
// answers them sorted lexically), following Link pagination within the
// bounds above. A tag that is not a valid tag is the registry's fault and
// fails the listing (ErrUpstream): the names are printed on terminals.
func (r *Repository) Tags(ctx context.Context, opts TagsOptions) ([]string, error) {
	n := opts.PageSize
	if n <= 0 {
		n = TagPageSize
	}
	if opts.Limit > 0 && opts.Limit < n {
		n = opts.Limit // one request for a small --limit
	}
	var tags []string
	err := r.resolveEach(ctx, func(ep *repoEndpoint) error {
		tags = tags[:0]
		u, err := url.Parse(ep.baseURL() + "/v2/" + r.path + "/tags/list?n=" + strconv.Itoa(n))
		if err != nil {
			return err
		}
		b := pageBounds{what: "tag list of " + r.path, maxPages: maxTagPages, maxPage: maxTagPageBytes, maxTotal: maxTagListBytes}
		return r.getPages(ctx, ep, u, "application/json", b, func(_ *http.Response, body []byte) error {
			var page struct {
				Tags []string `json:"tags"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				return invalidDocument(ep.host, "tag list of %s: %v", r.path, err)
			}
			for _, t := range page.Tags {
				if !anchoredTag.MatchString(t) {
					return invalidDocument(ep.host, "tag list of %s: invalid tag %q", r.path, t)
				}
			}
			tags = append(tags, page.Tags...)
			if opts.Limit > 0 && len(tags) >= opts.Limit {
				tags = tags[:opts.Limit]
				return errStopPaging
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return tags, nil
}
