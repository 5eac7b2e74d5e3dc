// Package hostile holds hand-written misbehaving registry servers for the
// hostile-registry suite: a small registry that serves one valid
// image by default and lets a test replace any answer (Fault), plus raw TCP
// servers that never answer or reset connections. Everything listens on
// 127.0.0.1 only.
package hostile

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// Kind is what a request asks for.
type Kind int

// Request kinds.
const (
	KindOther Kind = iota
	KindPing
	KindManifest
	KindBlob
	KindTags
	KindToken
)

func (k Kind) String() string {
	return [...]string{"other", "ping", "manifest", "blob", "tags", "token"}[k]
}

// Request is a parsed registry request handed to a Fault.
type Request struct {
	Kind Kind
	Repo string
	Ref  string // tag or digest of a manifest, digest of a blob
}

// Fault answers r instead of the registry when it returns true.
type Fault func(w http.ResponseWriter, r *http.Request, req Request) bool

// Seen is one request as it arrived.
type Seen struct {
	Method, Path, Authorization string
}

// Options configure Start.
type Options struct {
	// Repo and Tag name the served image; default "hostile/app" and "1.0".
	Repo, Tag string
	// Image is served; default a fresh one-layer OCI image.
	Image *testregistry.Image
	// Username/Password turn on basic auth for every /v2/ request.
	Username, Password string
	// Token turns on bearer auth: /v2/ answers 401 with a realm on this
	// server (/token), which grants TokenValue to anyone.
	Token bool
	// Fault is consulted before every answer.
	Fault Fault
	// TLS serves HTTPS (httptest's certificate for 127.0.0.1, which wharfd
	// accepts unverified, as for any loopback registry).
	TLS bool
}

// TokenValue is the bearer token the token endpoint hands out.
const TokenValue = "hostile-token-value"

// Registry is a running misbehaving registry.
type Registry struct {
	Host string // 127.0.0.1:port
	URL  string
	Repo string
	Tag  string
	// Image is what the registry serves when no Fault answers.
	Image *testregistry.Image

	opts Options
	srv  *httptest.Server

	mu      sync.Mutex
	seen    []Seen
	extra   map[digest.Digest]testregistry.Blob // manifests/blobs served by digest besides Image
	tagBlob *testregistry.Blob                  // manifest served for Tag, when not Image.Manifest
}

// Start starts a registry on 127.0.0.1.
func Start(opts Options) (*Registry, error) {
	if opts.Repo == "" {
		opts.Repo = "hostile/app"
	}
	if opts.Tag == "" {
		opts.Tag = "1.0"
	}
	if opts.Image == nil {
		img, err := testregistry.NewImage(testregistry.ImageOptions{})
		if err != nil {
			return nil, err
		}
		opts.Image = img
	}
	r := &Registry{Repo: opts.Repo, Tag: opts.Tag, Image: opts.Image, opts: opts, extra: map[digest.Digest]testregistry.Blob{}}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	if opts.TLS {
		r.srv.StartTLS()
	} else {
		r.srv.Start()
	}
	r.URL = r.srv.URL
	r.Host = strings.TrimPrefix(strings.TrimPrefix(r.srv.URL, "http://"), "https://")
	return r, nil
}

// Close stops the server and ends every open connection.
func (r *Registry) Close() {
	r.srv.CloseClientConnections()
	r.srv.Close()
}

// Ref is HOST/REPO:TAG.
func (r *Registry) Ref() string { return r.Host + "/" + r.Repo + ":" + r.Tag }

// Name is HOST/REPO.
func (r *Registry) Name() string { return r.Host + "/" + r.Repo }

// ServeManifest makes the registry answer the tag with body (served as
// mediaType, correctly digested) instead of the image's manifest.
func (r *Registry) ServeManifest(mediaType string, body []byte) digest.Digest {
	b := testregistry.NewBlob(mediaType, body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tagBlob = &b
	r.extra[digest.Digest(b.Digest)] = b
	return digest.Digest(b.Digest)
}

// ServeBlob adds content served by its digest.
func (r *Registry) ServeBlob(b testregistry.Blob) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.extra[digest.Digest(b.Digest)] = b
}

// Seen returns the requests received so far.
func (r *Registry) Seen() []Seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Seen(nil), r.seen...)
}

// Count is how many requests of kind arrived.
func (r *Registry) Count(kind Kind) int {
	n := 0
	for _, s := range r.Seen() {
		if Classify(s.Path).Kind == kind {
			n++
		}
	}
	return n
}

// Classify parses a request path.
func Classify(path string) Request {
	if path == "/v2/" || path == "/v2" {
		return Request{Kind: KindPing}
	}
	if path == "/token" {
		return Request{Kind: KindToken}
	}
	rest, ok := strings.CutPrefix(path, "/v2/")
	if !ok {
		return Request{}
	}
	for _, m := range []struct {
		sep  string
		kind Kind
	}{{"/manifests/", KindManifest}, {"/blobs/", KindBlob}} {
		if i := strings.LastIndex(rest, m.sep); i > 0 {
			return Request{Kind: m.kind, Repo: rest[:i], Ref: rest[i+len(m.sep):]}
		}
	}
	if repo, ok := strings.CutSuffix(rest, "/tags/list"); ok {
		return Request{Kind: KindTags, Repo: repo}
	}
	return Request{}
}

func (r *Registry) serve(w http.ResponseWriter, hr *http.Request) {
	r.mu.Lock()
	r.seen = append(r.seen, Seen{Method: hr.Method, Path: hr.URL.Path, Authorization: hr.Header.Get("Authorization")})
	r.mu.Unlock()
	req := Classify(hr.URL.Path)
	if req.Kind != KindToken && req.Kind != KindOther && !r.authorized(w, hr) {
		return
	}
	if r.opts.Fault != nil && r.opts.Fault(w, hr, req) {
		return
	}
	switch req.Kind {
	case KindPing:
		w.Header().Set("Docker-Distribution-Api-Version", "registry/2.0")
		w.WriteHeader(http.StatusOK)
	case KindToken:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"token": TokenValue, "expires_in": 300})
	case KindManifest, KindBlob:
		b, ok := r.lookup(req)
		if !ok || req.Repo != r.Repo {
			writeError(w, http.StatusNotFound, map[Kind]string{KindManifest: "MANIFEST_UNKNOWN", KindBlob: "BLOB_UNKNOWN"}[req.Kind], "unknown")
			return
		}
		WriteContent(w, hr, b.MediaType, b.Data, b.Digest)
	case KindTags:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"name": r.Repo, "tags": []string{r.Tag}})
	default:
		writeError(w, http.StatusNotFound, "UNSUPPORTED", "not here")
	}
}

func (r *Registry) lookup(req Request) (testregistry.Blob, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	img := r.Image
	if req.Kind == KindManifest && req.Ref == r.Tag {
		if r.tagBlob != nil {
			return *r.tagBlob, true
		}
		return img.Manifest, true
	}
	if b, ok := r.extra[digest.Digest(req.Ref)]; ok {
		return b, true
	}
	for _, b := range append([]testregistry.Blob{img.Manifest, img.Config}, img.Layers...) {
		if b.Digest == req.Ref {
			if (req.Kind == KindManifest) != (b.Digest == img.Manifest.Digest) {
				return testregistry.Blob{}, false
			}
			return b, true
		}
	}
	return testregistry.Blob{}, false
}

// authorized answers 401 and returns false when the request lacks the
// configured credentials.
func (r *Registry) authorized(w http.ResponseWriter, hr *http.Request) bool {
	got := hr.Header.Get("Authorization")
	switch {
	case r.opts.Token:
		if got == "Bearer "+TokenValue {
			return true
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="hostile"`, r.URL))
	case r.opts.Username != "":
		if u, p, ok := hr.BasicAuth(); ok && u == r.opts.Username && p == r.opts.Password {
			return true
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="hostile"`)
	default:
		return true
	}
	writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
	return false
}

// WriteContent answers a manifest or blob request with body, its media type
// and a Docker-Content-Digest of dgst (HEAD: headers only).
func WriteContent(w http.ResponseWriter, hr *http.Request, mediaType string, body []byte, dgst string) {
	h := w.Header()
	h.Set("Content-Type", mediaType)
	if dgst != "" {
		h.Set("Docker-Content-Digest", dgst)
	}
	h.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if hr.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": msg}}})
}

// WriteError answers with a distribution error document.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	writeError(w, status, code, msg)
}

// listen opens a 127.0.0.1 listener on a free port.
func listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
