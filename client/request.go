package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// maxJSONBody caps a non-streaming JSON answer (64 MiB): the largest is an
// image list or an inspect with many manifests, far below that.
const maxJSONBody = 64 << 20

// ErrConnectionFailed is returned when the daemon cannot be reached.
var ErrConnectionFailed = errors.New("Cannot connect to the wharf daemon")

// request describes one API call.
type request struct {
	method string
	path   string // without the version prefix, starting with "/"
	query  url.Values
	header http.Header
	body   io.Reader
	noVer  bool // unversioned path (/_ping)
	ctype  string
}

// buildURL returns the request URL for r.
func (c *Client) buildURL(r request) string {
	p := r.path
	if !r.noVer && c.version != "" {
		p = "/v" + c.version + p
	}
	u := url.URL{Scheme: c.scheme, Host: c.addr, Path: p}
	// Image names contain "/" and ":": keep them as typed in the path, but
	// escape anything else (spaces, "?", "#") so the daemon sees the name.
	u.RawPath = escapePath(p)
	if len(r.query) > 0 {
		u.RawQuery = r.query.Encode()
	}
	return u.String()
}

// escapePath escapes each path segment but keeps "/" and ":".
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(url.PathEscape(s), "%3A", ":")
	}
	return strings.Join(segs, "/")
}

// do sends r and returns the response when its status is 2xx; otherwise the
// decoded *Error. The caller closes the body.
func (c *Client) do(ctx context.Context, r request) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, r.method, c.buildURL(r), r.body)
	if err != nil {
		return nil, err
	}
	for k, vs := range r.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.ctype != "" {
		req.Header.Set("Content-Type", r.ctype)
	}
	req.Header.Set("User-Agent", c.ua)
	resp, err := c.http.Do(req)
	if c.trace != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		c.trace(r.method, req.URL.RequestURI(), status)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var op *net.OpError
		if errors.As(err, &op) {
			return nil, fmt.Errorf("%w at %s. Is the wharf daemon running? (%w)", ErrConnectionFailed, c.host, err)
		}
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// getJSON sends r and decodes the JSON answer into v; it returns the raw bytes too.
func (c *Client) getJSON(ctx context.Context, r request, v any) ([]byte, error) {
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := readCapped(resp.Body, maxJSONBody)
	if err != nil {
		return nil, err
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			return raw, fmt.Errorf("decoding %s %s answer: %w", r.method, r.path, err)
		}
	}
	return raw, nil
}

// readCapped reads all of r, failing beyond max bytes.
func readCapped(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("daemon answer larger than %d bytes", max)
	}
	return b, nil
}

// jsonBody marshals v for a request body.
func jsonBody(v any) (io.Reader, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}
