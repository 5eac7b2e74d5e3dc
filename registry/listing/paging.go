package listing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/wharfproject/wharf/registry/transport"
)

// Paged answers (the tag list, the referrers API) continue in a Link header
// (`<url>; rel="next"`, RFC 8288), so a registry decides how many requests
// a listing takes. Every listing is bounded: a number of pages, bytes per
// page and bytes in all; beyond, the listing fails naming the registry
// (ErrUpstream, 502), and nothing is returned half-read.

// Bounds bound one paged listing.
type Bounds struct {
	What     string // "tag list", "referrers of sha256:…": for the error
	MaxPages int
	MaxPage  int64 // bytes of one page
	MaxTotal int64 // bytes of all pages
}

// errStopPaging, returned by a page handler, ends the listing without error
// (the caller has what it wants, e.g. --limit tags).
var errStopPaging = errors.New("stop paging")

// Pages GETs u and then every next page the registry links to, within
// b, handing each page's response and body (read whole, capped) to fn.
// The requests go through t, scoped to pull from its repository. A page
// other than 200 is the error transport.StatusError makes of it.
func Pages(ctx context.Context, t Target, u *url.URL, accept string, b Bounds, fn func(resp *http.Response, body []byte) error) error {
	host := t.Host()
	ctx = transport.WithRepositoryScope(ctx, host, t.Path(), transport.ActionPull)
	var total int64
	for page := 1; ; page++ {
		if page > b.MaxPages {
			return transport.InvalidDocument(host, "%s exceeded %d pages", b.What, b.MaxPages)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return err
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := t.Do(req)
		if err != nil {
			return err
		}
		body, err := readPage(resp, b, total, host)
		if err != nil {
			return err
		}
		total += int64(len(body))
		if err := fn(resp, body); err != nil {
			if errors.Is(err, errStopPaging) {
				return nil
			}
			return err
		}
		next, err := nextLink(resp.Request.URL, resp.Header.Values("Link"))
		if err != nil {
			return transport.InvalidDocument(host, "%s: %v", b.What, err)
		}
		if next == nil {
			return nil
		}
		u = next
	}
}

// readPage reads one page, capped at the page bound and at what is left of
// the total bound; a non-200 answer becomes its error.
func readPage(resp *http.Response, b Bounds, total int64, host string) ([]byte, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, transport.MaxErrorBody))
		return nil, transport.StatusError(http.MethodGet, resp, body, host)
	}
	limit := min(b.MaxPage, b.MaxTotal-total)
	if resp.ContentLength > limit {
		return nil, pageTooLarge(host, b, total)
	}
	// The body is under the slow-body rule (transport/timeouts.go).
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", b.What, err)
	}
	if int64(len(body)) > limit {
		return nil, pageTooLarge(host, b, total)
	}
	return body, nil
}

func pageTooLarge(host string, b Bounds, total int64) error {
	if total+b.MaxPage > b.MaxTotal {
		return transport.InvalidDocument(host, "%s exceeded %d bytes", b.What, b.MaxTotal)
	}
	return transport.InvalidDocument(host, "%s: a page is larger than %d bytes", b.What, b.MaxPage)
}

// nextLink returns the target of the rel="next" link among the Link header
// values, resolved against base (the URL of the page that carried it); nil
// when there is none. A next page on another scheme or host is refused:
// the credentials of this registry go to this registry only.
func nextLink(base *url.URL, values []string) (*url.URL, error) {
	for _, v := range values {
		links, err := parseLinks(v)
		if err != nil {
			return nil, err
		}
		for _, l := range links {
			if !l.next {
				continue
			}
			ref, err := url.Parse(l.target)
			if err != nil {
				return nil, fmt.Errorf("invalid Link target %q: %w", l.target, err)
			}
			u := base.ResolveReference(ref)
			if u.Scheme != base.Scheme || u.Host != base.Host {
				return nil, fmt.Errorf("Link points to another registry (%s://%s)", u.Scheme, u.Host)
			}
			return u, nil
		}
	}
	return nil, nil
}

// link is one link-value of a Link header.
type link struct {
	target string
	next   bool // rel names "next"
}

// maxLinks bounds the link-values parsed from one header value: a registry
// sends one or two (next, maybe prev).
const maxLinks = 16

// parseLinks parses one Link header value: link-values separated by
// commas, each `<target>` followed by `; param=value` pairs (value a token
// or a quoted string). rel may list several relation types.
func parseLinks(v string) ([]link, error) {
	var out []link
	s := v
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return out, nil
		}
		if len(out) == maxLinks {
			return nil, fmt.Errorf("more than %d links in a Link header", maxLinks)
		}
		if s[0] != '<' {
			return nil, fmt.Errorf("malformed Link header %q", v)
		}
		end := strings.IndexByte(s, '>')
		if end < 0 {
			return nil, fmt.Errorf("malformed Link header %q", v)
		}
		l := link{target: s[1:end]}
		s = s[end+1:]
		// Parameters up to the next comma outside a quoted string.
		for {
			s = strings.TrimLeft(s, " \t")
			if s == "" || s[0] == ',' {
				break
			}
			if s[0] != ';' {
				return nil, fmt.Errorf("malformed Link header %q", v)
			}
			s = strings.TrimLeft(s[1:], " \t")
			i := strings.IndexAny(s, "=;,")
			if i < 0 {
				s = "" // a last parameter without a value
				break
			}
			name := strings.ToLower(strings.TrimSpace(s[:i]))
			if s[i] != '=' {
				s = s[i:]
				continue
			}
			s = strings.TrimLeft(s[i+1:], " \t")
			var value string
			if strings.HasPrefix(s, `"`) {
				q := strings.IndexByte(s[1:], '"')
				if q < 0 {
					return nil, fmt.Errorf("malformed Link header %q: unterminated quote", v)
				}
				value, s = s[1:1+q], s[2+q:]
			} else {
				j := strings.IndexAny(s, ";,")
				if j < 0 {
					j = len(s)
				}
				value, s = strings.TrimSpace(s[:j]), s[j:]
			}
			if name == "rel" {
				for _, rel := range strings.Fields(value) {
					if strings.EqualFold(rel, "next") {
						l.next = true
					}
				}
			}
		}
		out = append(out, l)
	}
}
