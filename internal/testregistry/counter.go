package testregistry

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// Counter is a reverse proxy that counts the requests passing through it, so
// tests can check round-trip budgets (remote inspect: cold ≤ 4, warm = 1).
type Counter struct {
	// URL is the proxy's base URL (http://127.0.0.1:PORT); Host is its host:port.
	URL  string
	Host string

	srv *httptest.Server

	mu      sync.Mutex
	before  func(*http.Request) // see SetBefore
	log     []string            // "METHOD /path[?query]", in arrival order
	headers []http.Header       // request headers, same order as log
	hits    map[string]int      // by Class
}

// NewCounter starts a counting reverse proxy in front of target (a base URL).
// The Host header is left as the client sent it, so the registry builds
// upload Locations that point back at the proxy. An https target gets an
// https proxy (httptest's certificate) and is not verified.
func NewCounter(target string) (*Counter, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("testregistry: counter target: %w", err)
	}
	c := &Counter{hits: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // stream blobs as they come
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.record(r)
		c.mu.Lock()
		before := c.before
		c.mu.Unlock()
		if before != nil {
			before(r)
		}
		rp.ServeHTTP(w, r)
	}))
	if u.Scheme == "https" {
		rp.Transport = insecureTransport()
		c.srv.StartTLS()
	} else {
		c.srv.Start()
	}
	c.URL = c.srv.URL
	c.Host = strings.TrimPrefix(strings.TrimPrefix(c.srv.URL, "http://"), "https://")
	return c, nil
}

// SetBefore installs fn, called with every request after it is counted and
// before it is passed on (nil removes it). A test holds requests with it,
// for example a token request while other clients gather behind it.
func (c *Counter) SetBefore(fn func(*http.Request)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.before = fn
}

func (c *Counter) record(r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	entry := r.Method + " " + r.URL.Path
	if r.URL.RawQuery != "" {
		entry += "?" + r.URL.RawQuery
	}
	c.log = append(c.log, entry)
	c.headers = append(c.headers, r.Header.Clone())
	c.hits[Class(r.Method, r.URL.Path)]++
}

// Class names a request by method and kind of path: "GET /v2/",
// "HEAD manifests", "GET blobs", "POST uploads", "GET tags", "GET token" …
func Class(method, path string) string {
	switch {
	case path == "/v2/" || path == "/v2":
		return method + " /v2/"
	case strings.HasPrefix(path, "/v2/") && strings.Contains(path, "/manifests/"):
		return method + " manifests"
	case strings.HasPrefix(path, "/v2/") && strings.Contains(path, "/blobs/uploads"):
		return method + " uploads"
	case strings.HasPrefix(path, "/v2/") && strings.Contains(path, "/blobs/"):
		return method + " blobs"
	case strings.HasPrefix(path, "/v2/") && strings.HasSuffix(path, "/tags/list"):
		return method + " tags"
	case strings.HasPrefix(path, "/v2/") && strings.Contains(path, "/referrers/"):
		return method + " referrers"
	case strings.HasPrefix(path, "/token"):
		return method + " token"
	case strings.HasPrefix(path, "/v1/"):
		return method + " v1"
	}
	return method + " other"
}

// Count returns how many requests of class (see Class) arrived since the last Reset.
func (c *Counter) Count(class string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits[class]
}

// Total returns how many requests arrived since the last Reset.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.log)
}

// Requests returns "METHOD /path[?query]" of every request since the last Reset.
func (c *Counter) Requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log...)
}

// Summary is a sorted "class=n" list, for failure messages.
func (c *Counter) Summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for k, v := range c.hits {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// Reset forgets every request seen so far.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = nil
	c.headers = nil
	c.hits = map[string]int{}
}

// HeaderValues returns the values of header key on every request since the
// last Reset, one entry per request ("" when absent).
func (c *Counter) HeaderValues(key string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.headers))
	for i, h := range c.headers {
		out[i] = h.Get(key)
	}
	return out
}

// Close stops the proxy.
func (c *Counter) Close() {
	c.srv.CloseClientConnections()
	c.srv.Close()
}
