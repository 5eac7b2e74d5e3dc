package blobs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/transport"
)

// Target is a repository on one endpoint, as its blobs are read.
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

// Open opens desc on t from byte off under the resuming reader (reopened
// where it breaks, the first wait backoff: ReopenBackoff unless a test
// shortens it); ask false sends no request until a read needs one.
func Open(ctx context.Context, t Target, desc ocispec.Descriptor, off int64, ask bool, backoff time.Duration) (io.ReadCloser, error) {
	open := func(ctx context.Context, off int64) (io.ReadCloser, int64, error) {
		return Get(ctx, t, desc, off)
	}
	var body io.ReadCloser
	start := off
	if ask {
		var err error
		if body, start, err = open(ctx, off); err != nil {
			return nil, err
		}
	}
	rb := newResumingBody(ctx, open, desc, t.Host(), body, off, start)
	rb.backoff = backoff
	return rb, nil
}

func blobURL(t Target, d digest.Digest) string {
	return t.BaseURL() + "/v2/" + t.Path() + "/blobs/" + d.String()
}

// Get GETs a blob (following a redirect to its store) from byte off:
// the body and the offset of its first byte, once the answer's
// Content-Length, Content-Range and Docker-Content-Digest, when given, agree
// with desc. off > 0 asks with `Range: bytes=off-`; a 200 to it (the whole
// blob: a registry that ignores Range) starts at 0, a 206 must start at off
// (else ErrUpstream). Missing: errdefs.ErrNotFound.
func Get(ctx context.Context, t Target, desc ocispec.Descriptor, off int64) (io.ReadCloser, int64, error) {
	ctx = transport.WithRepositoryScope(ctx, t.Host(), t.Path(), transport.ActionPull)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, blobURL(t, desc.Digest), nil)
	if err != nil {
		return nil, 0, err
	}
	if off > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-")
	}
	resp, err := t.Do(req)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case resp.StatusCode == http.StatusOK || (off > 0 && resp.StatusCode == http.StatusPartialContent):
		var start int64
		want := desc.Size
		if resp.StatusCode == http.StatusPartialContent {
			first, last, total, err := parseContentRange(resp.Header.Get("Content-Range"))
			if err == nil && (first != off || last >= desc.Size || (total != -1 && total != desc.Size)) {
				err = fmt.Errorf("Content-Range %q, asked for bytes=%d- of %d", truncate(resp.Header.Get("Content-Range"), 64), off, desc.Size)
			}
			if err != nil {
				resp.Body.Close()
				return nil, 0, transport.InvalidDocument(t.Host(), "blob %s: %v", desc.Digest, err)
			}
			// A shorter range than asked is a truncation: the reader asks
			// again from where it ends.
			start, want = first, last+1-first
		}
		if resp.ContentLength != -1 && resp.ContentLength != want {
			resp.Body.Close()
			return nil, 0, fmt.Errorf("%s %q: mismatch Content-Length", resp.Request.Method, resp.Request.URL.Redacted())
		}
		if err := checkContentDigest(resp, desc.Digest); err != nil {
			resp.Body.Close()
			return nil, 0, err
		}
		return resp.Body, start, nil
	case resp.StatusCode == http.StatusNotFound:
		resp.Body.Close()
		return nil, 0, fmt.Errorf("%s: not found%.0w", desc.Digest, errdefs.ErrNotFound)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, transport.MaxErrorBody))
	return nil, 0, transport.StatusError(http.MethodGet, resp, body, t.Host())
}

// Head asks (HEAD) whether the repository has blob d: its size when
// it has. Missing: errdefs.ErrNotFound.
func Head(ctx context.Context, t Target, d digest.Digest) (int64, error) {
	ctx = transport.WithRepositoryScope(ctx, t.Host(), t.Path(), transport.ActionPull)
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, blobURL(t, d), nil)
	if err != nil {
		return 0, err
	}
	resp, err := t.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		if resp.ContentLength == -1 {
			return 0, fmt.Errorf("%s %q: unknown response Content-Length", resp.Request.Method, resp.Request.URL.Redacted())
		}
		if err := checkContentDigest(resp, d); err != nil {
			return 0, err
		}
		return resp.ContentLength, nil
	case http.StatusNotFound:
		return 0, fmt.Errorf("%s: not found%.0w", d, errdefs.ErrNotFound)
	}
	return 0, transport.StatusError(http.MethodHead, resp, nil, t.Host())
}

// checkContentDigest: a Docker-Content-Digest, when given, names want.
func checkContentDigest(resp *http.Response, want digest.Digest) error {
	h := resp.Header.Get("Docker-Content-Digest")
	if h == "" {
		return nil
	}
	got, err := digest.Parse(h)
	if err != nil {
		return fmt.Errorf("%s %q: invalid response header: `Docker-Content-Digest: %s`", resp.Request.Method, resp.Request.URL.Redacted(), h)
	}
	if got != want {
		return fmt.Errorf("%s %q: invalid response; digest mismatch in Docker-Content-Digest: received %q when expecting %q", resp.Request.Method, resp.Request.URL.Redacted(), got, want)
	}
	return nil
}
