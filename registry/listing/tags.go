// Package listing is the registry's paged listings: a repository's tags
// (and the process-wide cache of whole listings the newer-version check
// reads), a registry's catalog, and the Link pagination they and the
// referrers API share, each bounded in pages, bytes and the memory what
// they decode takes.
//
// It speaks to a registry through Target, which package registry
// implements over one endpoint of a repository; below it is
// registry/transport (the scopes, the error classes), never package
// registry.
package listing

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry/transport"
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
	maxTagPageBytes = 4 << 20
	// maxTags bounds the tags one listing holds, because the byte cap
	// bounds what is read, not what it becomes: a one-letter tag is 4
	// bytes of JSON ("a",) and 17 in memory (a 16-byte string header and
	// its byte), so 64 MiB of them take a process from 16 MB to 1.1 GB.
	// 1,000,000 is what 1,000 pages of the default
	// 1,000 hold: 16 MiB of headers, and the tags' bytes within the 64 MiB
	// read. It is checked after each page, whose decoding the page cap
	// bounds: 4 MiB holds at most ~1,050,000 tags (16 MiB of headers).
	maxTags = 1_000_000
	// maxTagMemory bounds the memory the decoded tags take, each counted
	// as its length plus its 16-byte string header: 32 MiB, 1,000,000 tags
	// of 16 characters, or 230,000 of the longest (128). Without it the
	// 64 MiB read of the longest tags took wharfd to 331 MiB; the answer
	// is encoded again as JSON, so what is held shows about twice.
	maxTagMemory = 32 << 20
	// tagHeaderBytes is what a Go string header costs (pointer, length).
	tagHeaderBytes = 16
)

// Limit bounds what one tag or catalog listing holds; the zero value
// means maxTags names and maxTagMemory bytes. Tests of the bounds set a
// smaller one on the Service, so that proving them takes thousands of
// names rather than a million.
type Limit struct {
	Names  int
	Memory int64
}

func (l Limit) orDefault() Limit {
	if l.Names <= 0 {
		l.Names = maxTags
	}
	if l.Memory <= 0 {
		l.Memory = maxTagMemory
	}
	return l
}

// Target is a repository on one endpoint, as a listing pages through it.
type Target interface {
	// Host is the endpoint's host: scopes and errors name it.
	Host() string
	// BaseURL is the endpoint's scheme://host[/root], before /v2/.
	BaseURL() string
	// Path is the repository's path on the registry.
	Path() string
	// Do sends req through the endpoint's authorizing client.
	Do(req *http.Request) (*http.Response, error)
}

// TagsOptions shape one tag listing.
type TagsOptions struct {
	// PageSize is the n= of each request; 0 means TagPageSize.
	PageSize int
	// Limit stops the listing once this many tags are read (no further
	// page is requested); 0 means all.
	Limit int
}

// Tags lists the repository's tags on t in the registry's order
// (distribution answers them sorted lexically), following Link pagination
// within the bounds above. A tag that is not a valid tag is the registry's
// fault and fails the listing (ErrUpstream): the names are printed on
// terminals.
func Tags(ctx context.Context, t Target, opts TagsOptions, lim Limit) ([]string, error) {
	n := opts.PageSize
	if n <= 0 {
		n = TagPageSize
	}
	if opts.Limit > 0 && opts.Limit < n {
		n = opts.Limit // one request for a small --limit
	}
	var tags []string
	var held int64 // the tags' memory, as maxTagMemory counts it
	lim = lim.orDefault()
	host, path := t.Host(), t.Path()
	u, err := url.Parse(t.BaseURL() + "/v2/" + path + "/tags/list?n=" + strconv.Itoa(n))
	if err != nil {
		return nil, err
	}
	b := Bounds{What: "tag list of " + path, MaxPages: maxTagPages, MaxPage: maxTagPageBytes, MaxTotal: maxTagListBytes}
	err = Pages(ctx, t, u, "application/json", b, func(_ *http.Response, body []byte) error {
		var page struct {
			Tags []string `json:"tags"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return transport.InvalidDocument(host, "tag list of %s: %v", path, err)
		}
		if len(tags)+len(page.Tags) > lim.Names {
			return transport.InvalidDocument(host, "tag list of %s: more than %d tags", path, lim.Names)
		}
		for _, t := range page.Tags {
			if !imagespec.ValidTag(t) {
				return transport.InvalidDocument(host, "tag list of %s: invalid tag %q", path, t)
			}
			if held += int64(len(t)) + tagHeaderBytes; held > lim.Memory {
				return transport.InvalidDocument(host, "tag list of %s: its tags take more than %d bytes in memory", path, lim.Memory)
			}
		}
		tags = append(tags, page.Tags...)
		if opts.Limit > 0 && len(tags) >= opts.Limit {
			tags = tags[:opts.Limit]
			return errStopPaging
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tags, nil
}
