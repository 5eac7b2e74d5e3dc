// Package client is the Go SDK for wharfd's API: the image part of the Docker
// Engine API plus wharf's remote inspection. It speaks HTTP over a unix socket
// or TCP and decodes `{"message": …}` errors into *Error values that keep the
// status code and the daemon's message verbatim.
package client

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultVersion is the API version the client asks for: every request path
// starts with /v1.55.
const DefaultVersion = "1.55"

// Client talks to one wharfd.
type Client struct {
	http    *http.Client
	scheme  string // "http"
	addr    string // host part of request URLs
	version string
	ua      string
	host    string // as given, for messages
	trace   func(method, path string, status int)
}

// Option configures a Client.
type Option func(*Client)

// WithVersion sets the API version prefix (without "v").
func WithVersion(v string) Option { return func(c *Client) { c.version = v } }

// WithHTTPClient replaces the HTTP client (tests use httptest's).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.ua = ua } }

// WithTrace calls fn after every request with its method, path and query,
// and the response status (0 when none came); wharf -D logs them. Headers
// are never passed: X-Registry-Auth carries credentials.
func WithTrace(fn func(method, path string, status int)) Option {
	return func(c *Client) { c.trace = fn }
}

// New returns a client for host: "unix:///path/to.sock", "tcp://h:p",
// "http://h:p" or a bare socket path.
func New(host string, opts ...Option) (*Client, error) {
	proto, addr, err := ParseHost(host)
	if err != nil {
		return nil, err
	}
	c := &Client{scheme: "http", version: DefaultVersion, ua: "wharf-client", host: host}
	switch proto {
	case "unix":
		// The URL host is ignored on a unix socket; "wharf" shows in logs.
		c.addr = "wharf"
		sock := addr
		c.http = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
			// Streams (pull, events) stay open for as long as they run, so only
			// connection setup has a timeout.
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConns:        4,
		}}
	case "tcp", "http":
		c.addr = addr
		c.http = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	default:
		return nil, fmt.Errorf("unsupported protocol %q in host %q", proto, host)
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// ParseHost splits a daemon address into protocol and address.
func ParseHost(host string) (proto, addr string, err error) {
	if host == "" {
		return "", "", fmt.Errorf("empty daemon host")
	}
	if strings.HasPrefix(host, "/") {
		return "unix", host, nil
	}
	u, err := url.Parse(host)
	if err != nil {
		return "", "", fmt.Errorf("invalid daemon host %q: %w", host, err)
	}
	switch u.Scheme {
	case "unix":
		p := u.Path
		if p == "" {
			p = u.Opaque
		}
		if p == "" {
			return "", "", fmt.Errorf("invalid daemon host %q: no socket path", host)
		}
		return "unix", p, nil
	case "tcp", "http":
		if u.Host == "" {
			return "", "", fmt.Errorf("invalid daemon host %q: no address", host)
		}
		return u.Scheme, u.Host, nil
	}
	return "", "", fmt.Errorf("invalid daemon host %q: want unix://PATH or tcp://HOST:PORT", host)
}

// APIVersion returns the API version the client uses (the path prefix).
func (c *Client) APIVersion() string { return c.version }

// Close releases idle connections.
func (c *Client) Close() error {
	c.http.CloseIdleConnections()
	return nil
}
