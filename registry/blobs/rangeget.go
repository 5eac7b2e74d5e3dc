package blobs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/transport"
)

// MaxRangeSkip is how many leading bytes GetRange discards when a registry
// ignores Range and answers 200 with the whole blob. A read near the start
// of a layer (an eStargz footer is at the end, but a gzip checkpoint or a
// TOC chunk is often in the first MiB) then still succeeds at the cost of
// at most 1 MiB more; beyond it the caller is told, instead of paying a
// whole-layer download it asked not to make.
const MaxRangeSkip = 1 << 20

// RangeTarget is a Target whose blob redirects may be remembered.
type RangeTarget interface {
	Target
	// Locations is where the store URLs are remembered, LocationKey the
	// endpoint, repository and credential identity they are kept under.
	Locations() *Locations
	LocationKey() string
	// SendDirect sends req to a blob store: through the same stack (TLS,
	// retries, metrics) but with no Authorization of the registry's.
	SendDirect(req *http.Request) (*http.Response, error)
}

// GetRange reads bytes [off, off+n) of desc on t with one single-range
// request (`Range: bytes=off-(off+n-1)`: never a multi-range, which GHCR's
// blob CDN refuses). The answer must be a 206 whose Content-Range is
// exactly that range, or a 200 (a registry that ignores Range) when the
// range is the whole blob or starts within MaxRangeSkip; anything else is
// ErrUpstream. The body delivers exactly n bytes, never more: fewer is
// io.ErrUnexpectedEOF. The bytes are not verified (a range has no digest):
// the caller checks them against what it knows (a file's digest, a TOC
// chunk's).
//
// A redirect to the blob's store is remembered (Locations) and the next
// read goes straight there; a 401, 403, 404 or 410 from a remembered URL
// forgets it and the read goes through the registry once.
func GetRange(ctx context.Context, t RangeTarget, desc ocispec.Descriptor, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 || off > desc.Size || n > desc.Size-off {
		return nil, fmt.Errorf("blob %s: range [%d, +%d) outside its %d bytes%.0w", desc.Digest, off, n, desc.Size, errdefs.ErrInvalidArgument)
	}
	if n == 0 {
		return io.NopCloser(eofReader{}), nil
	}
	rng := "bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+n-1, 10)
	locs, key := t.Locations(), t.LocationKey()+"\x00"+desc.Digest.String()
	if locs != nil {
		if u, ok := locs.get(key); ok {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
			if err != nil {
				return nil, err
			}
			req.Header.Set("Range", rng)
			resp, err := t.SendDirect(req)
			if err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				// The store is unreachable: the registry may redirect
				// elsewhere now.
				locs.drop(key)
			} else {
				switch resp.StatusCode {
				case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusGone:
					// Expired, revoked or moved: ask the registry again.
					resp.Body.Close()
					locs.drop(key)
				default:
					return rangeBody(resp, u.Host, desc, off, n)
				}
			}
		}
	}

	ctx = transport.WithRepositoryScope(ctx, t.Host(), t.Path(), transport.ActionPull)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, blobURL(t, desc.Digest), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", rng)
	resp, err := t.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := rangeBody(resp, t.Host(), desc, off, n)
	if err == nil && locs != nil && resp.Request != nil && resp.Request.Response != nil && resp.Request.URL.Host != req.URL.Host {
		// Followed a redirect to another host: its store.
		locs.remember(key, resp.Request.URL, resp.Request.Response.Header)
	}
	return body, err
}

// rangeBody checks resp, the answer to a range read of [off, off+n) of
// desc, and returns its body cut to n bytes.
func rangeBody(resp *http.Response, host string, desc ocispec.Descriptor, off, n int64) (io.ReadCloser, error) {
	fail := func(err error) (io.ReadCloser, error) {
		resp.Body.Close()
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		first, last, total, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err == nil && (first != off || last != off+n-1 || (total != -1 && total != desc.Size)) {
			err = fmt.Errorf("Content-Range %q, asked for bytes=%d-%d of %d", truncate(resp.Header.Get("Content-Range"), 64), off, off+n-1, desc.Size)
		}
		if err != nil {
			return fail(transport.InvalidDocument(host, "blob %s: %v", desc.Digest, err))
		}
		if resp.ContentLength != -1 && resp.ContentLength != n {
			return fail(transport.InvalidDocument(host, "blob %s: Content-Length %d for a range of %d bytes", desc.Digest, resp.ContentLength, n))
		}
		if err := checkContentDigest(resp, desc.Digest); err != nil {
			return fail(transport.InvalidDocument(host, "%v", err))
		}
		return &exactBody{body: resp.Body, left: n, host: host, desc: desc}, nil
	case http.StatusOK:
		if resp.ContentLength != -1 && resp.ContentLength != desc.Size {
			return fail(transport.InvalidDocument(host, "blob %s: Content-Length %d, the descriptor says %d", desc.Digest, resp.ContentLength, desc.Size))
		}
		if err := checkContentDigest(resp, desc.Digest); err != nil {
			return fail(transport.InvalidDocument(host, "%v", err))
		}
		if off > MaxRangeSkip {
			return fail(transport.InvalidDocument(host, "blob %s: the registry ignored Range (200 to bytes=%d-%d; at most %d leading bytes are skipped)", desc.Digest, off, off+n-1, MaxRangeSkip))
		}
		if off > 0 {
			if k, err := io.CopyN(io.Discard, resp.Body, off); err != nil {
				return fail(fmt.Errorf("registry %s: blob %s: %d of the %d bytes before the range: %w", host, desc.Digest, k, off, unexpected(err)))
			}
		}
		return &exactBody{body: resp.Body, left: n, host: host, desc: desc}, nil
	case http.StatusNotFound:
		return fail(fmt.Errorf("%s: not found%.0w", desc.Digest, errdefs.ErrNotFound))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, transport.MaxErrorBody))
	return nil, transport.StatusError(http.MethodGet, resp, body, host)
}

// exactBody delivers the first left bytes of body, then io.EOF; an end
// before them is io.ErrUnexpectedEOF. Nothing past them is read.
type exactBody struct {
	body io.ReadCloser
	left int64
	host string
	desc ocispec.Descriptor
}

func (e *exactBody) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.body.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		return n, fmt.Errorf("registry %s: blob %s: range ended %d bytes short: %w", e.host, e.desc.Digest, e.left, io.ErrUnexpectedEOF)
	}
	if err == io.EOF || (err == nil && e.left == 0) {
		return n, io.EOF
	}
	return n, err
}

func (e *exactBody) Close() error { return e.body.Close() }

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
