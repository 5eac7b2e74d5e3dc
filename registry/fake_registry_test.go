package registry

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// fakeRegistry plays a v2 registry (optionally token-protected) in tests and
// counts every request it receives, token requests included.
type fakeRegistry struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	requests  []string
	tokenAuth bool
	basicAuth bool   // Basic challenge instead of tokens
	user      string // credentials required by the token endpoint / basic auth, if set
	pass      string
	tokens    map[string]bool
	expiresIn int
	tokenPad  int // bytes of padding in each token response

	manifests map[string]map[string]fakeManifest // repo → tag or digest
	blobs     map[digest.Digest][]byte
	uploads   int
	sessions  map[string][]byte // open upload sessions → bytes received

	// hostile knobs
	headStatus   int  // answer HEAD manifest with this status
	omitHeadDgst bool // HEAD without Docker-Content-Digest
	lieDigest    bool // GET manifest with a Docker-Content-Digest that is not the body's
	v1Only       bool
	hook         func(w http.ResponseWriter, r *http.Request) bool // true = handled
	tagsPerPage  int
	refuseMount  bool
	realmBase    string // token realm base URL; default the server's own
}

type fakeManifest struct {
	mediaType string
	body      []byte
}

func newFakeRegistry(t *testing.T) *fakeRegistry {
	f := &fakeRegistry{
		t:         t,
		tokens:    map[string]bool{},
		manifests: map[string]map[string]fakeManifest{},
		blobs:     map[digest.Digest][]byte{},
		sessions:  map[string][]byte{},
		expiresIn: 300,
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// openSessions is how many upload sessions are neither completed nor cancelled.
func (f *fakeRegistry) openSessions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}

func (f *fakeRegistry) host() string {
	return strings.TrimPrefix(strings.TrimPrefix(f.srv.URL, "http://"), "https://")
}

// newTLSFakeRegistry is newFakeRegistry serving TLS (httptest's own
// certificate for 127.0.0.1, which only an insecure client accepts).
func newTLSFakeRegistry(t *testing.T) *fakeRegistry {
	f := newFakeRegistry(t)
	f.srv.Close()
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeRegistry) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeRegistry) reset() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.requests
	f.requests = nil
	return r
}

func (f *fakeRegistry) putManifest(repo, ref, mediaType string, body []byte) digest.Digest {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.manifests[repo] == nil {
		f.manifests[repo] = map[string]fakeManifest{}
	}
	d := digest.FromBytes(body)
	m := fakeManifest{mediaType: mediaType, body: body}
	f.manifests[repo][d.String()] = m
	if ref != "" {
		f.manifests[repo][ref] = m
	}
	return d
}

func (f *fakeRegistry) putBlob(b []byte) ocispec.Descriptor {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := digest.FromBytes(b)
	f.blobs[d] = b
	return ocispec.Descriptor{Digest: d, Size: int64(len(b))}
}

// addImage stores a single-platform image and returns its manifest digest.
func (f *fakeRegistry) addImage(repo, tag, os, arch, variant string) (ocispec.Descriptor, []byte) {
	cfg := []byte(fmt.Sprintf(`{"architecture":%q,"os":%q,"variant":%q,"config":{"Labels":{"repo":%q}},"rootfs":{"type":"layers","diff_ids":[]}}`, arch, os, variant, repo))
	cd := f.putBlob(cfg)
	cd.MediaType = ocispec.MediaTypeImageConfig
	ld := f.putBlob([]byte("layer-" + repo + arch + variant))
	ld.MediaType = ocispec.MediaTypeImageLayerGzip
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cd, Layers: []ocispec.Descriptor{ld}}
	m.SchemaVersion = 2
	body, _ := json.Marshal(m)
	d := f.putManifest(repo, tag, ocispec.MediaTypeImageManifest, body)
	return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: d, Size: int64(len(body))}, cfg
}

// addIndex stores a multi-platform image (plus an attestation entry).
func (f *fakeRegistry) addIndex(repo, tag string, platforms ...ocispec.Platform) digest.Digest {
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex}
	idx.SchemaVersion = 2
	for _, p := range platforms {
		d, _ := f.addImage(repo, "", p.OS, p.Architecture, p.Variant)
		p := p
		d.Platform = &p
		idx.Manifests = append(idx.Manifests, d)
	}
	att, _ := f.addImage(repo, "", "unknown", "unknown", "")
	att.Platform = &ocispec.Platform{OS: "unknown", Architecture: "unknown"}
	idx.Manifests = append(idx.Manifests, att)
	body, _ := json.Marshal(idx)
	return f.putManifest(repo, tag, ocispec.MediaTypeImageIndex, body)
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"errors":[{"code":%q,"message":%q}]}`, code, msg)
}

func (f *fakeRegistry) authorised(w http.ResponseWriter, r *http.Request) bool {
	f.mu.Lock()
	tokenAuth, basicAuth, user, pass := f.tokenAuth, f.basicAuth, f.user, f.pass
	f.mu.Unlock()
	a := r.Header.Get("Authorization")
	switch {
	case tokenAuth:
		if strings.HasPrefix(a, "Bearer ") {
			f.mu.Lock()
			ok := f.tokens[strings.TrimPrefix(a, "Bearer ")]
			f.mu.Unlock()
			if ok {
				return true
			}
		}
		scope := ""
		if parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/v2/"), "/manifests/", 2); len(parts) == 2 {
			scope = fmt.Sprintf(`,scope="repository:%s:pull"`, parts[0])
		}
		realm := f.srv.URL
		if f.realmBase != "" {
			realm = f.realmBase
		}
		w.Header().Set("Www-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="fake"%s`, realm, scope))
		writeErr(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
		return false
	case basicAuth:
		u, p, ok := r.BasicAuth()
		if ok && u == user && p == pass {
			return true
		}
		w.Header().Set("Www-Authenticate", `Basic realm="fake"`)
		writeErr(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
		return false
	}
	return true
}

func (f *fakeRegistry) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	hook := f.hook
	f.mu.Unlock()
	if hook != nil && hook(w, r) {
		return
	}
	p := r.URL.Path
	switch {
	case p == "/token":
		f.serveToken(w, r)
		return
	case strings.HasPrefix(p, "/v1/"):
		http.NotFound(w, r)
		return
	case f.v1Only:
		http.NotFound(w, r)
		return
	}
	if !f.authorised(w, r) {
		return
	}
	if p == "/v2/" {
		w.WriteHeader(http.StatusOK)
		return
	}
	rest := strings.TrimPrefix(p, "/v2/")
	switch {
	case strings.Contains(rest, "/manifests/"):
		parts := strings.SplitN(rest, "/manifests/", 2)
		f.serveManifest(w, r, parts[0], parts[1])
	case strings.Contains(rest, "/blobs/uploads/"):
		f.serveUpload(w, r, strings.SplitN(rest, "/blobs/uploads/", 2)[0])
	case strings.Contains(rest, "/blobs/"):
		parts := strings.SplitN(rest, "/blobs/", 2)
		f.mu.Lock()
		b, ok := f.blobs[digest.Digest(parts[1])]
		f.mu.Unlock()
		if !ok {
			writeErr(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown to registry")
			return
		}
		w.Header().Set("Docker-Content-Digest", parts[1])
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		if r.Method == http.MethodGet {
			w.Write(b)
		}
	case strings.HasSuffix(rest, "/tags/list"):
		f.serveTags(w, r, strings.TrimSuffix(rest, "/tags/list"))
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeRegistry) serveToken(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method == http.MethodPost {
		r.ParseForm()
		if r.PostForm.Get("grant_type") != "refresh_token" || !strings.HasPrefix(r.PostForm.Get("refresh_token"), "refresh-") {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"details":"invalid refresh token"}`)
			return
		}
		tok := fmt.Sprintf("tok-%d", len(f.tokens)+1)
		f.tokens[tok] = true
		fmt.Fprintf(w, `{"access_token":%q,"expires_in":%d}`, tok, f.expiresIn)
		return
	}
	if f.user != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u != f.user || p != f.pass {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"details":"incorrect username or password"}`)
			return
		}
	}
	tok := fmt.Sprintf("tok-%d", len(f.tokens)+1)
	f.tokens[tok] = true
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"token":%q,"expires_in":%d,"refresh_token":"refresh-%s","pad":%q}`, tok, f.expiresIn, tok, strings.Repeat("x", f.tokenPad))
}

func (f *fakeRegistry) serveManifest(w http.ResponseWriter, r *http.Request, repo, ref string) {
	f.mu.Lock()
	m, ok := f.manifests[repo][ref]
	headStatus, omit, lie := f.headStatus, f.omitHeadDgst, f.lieDigest
	f.mu.Unlock()
	switch r.Method {
	case http.MethodPut:
		body, _ := io.ReadAll(r.Body)
		d := f.putManifest(repo, ref, r.Header.Get("Content-Type"), body)
		w.Header().Set("Docker-Content-Digest", d.String())
		w.WriteHeader(http.StatusCreated)
		return
	case http.MethodHead:
		if headStatus != 0 {
			w.WriteHeader(headStatus)
			return
		}
	}
	if !ok {
		writeErr(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
		return
	}
	d := digest.FromBytes(m.body)
	if lie {
		d = digest.FromString("something else")
	}
	if !(r.Method == http.MethodHead && omit) {
		w.Header().Set("Docker-Content-Digest", d.String())
	}
	w.Header().Set("Content-Type", m.mediaType)
	w.Header().Set("Content-Length", strconv.Itoa(len(m.body)))
	if r.Method == http.MethodGet {
		w.Write(m.body)
	}
}

func (f *fakeRegistry) serveTags(w http.ResponseWriter, r *http.Request, repo string) {
	f.mu.Lock()
	var tags []string
	for ref := range f.manifests[repo] {
		if !strings.Contains(ref, ":") {
			tags = append(tags, ref)
		}
	}
	per := f.tagsPerPage
	f.mu.Unlock()
	sort.Strings(tags)
	if last := r.URL.Query().Get("last"); last != "" {
		i := sort.SearchStrings(tags, last)
		if i < len(tags) && tags[i] == last {
			i++
		}
		tags = tags[i:]
	}
	if per > 0 && len(tags) > per {
		w.Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/list?n=%d&last=%s>; rel="next"`, repo, per, tags[per-1]))
		tags = tags[:per]
	}
	json.NewEncoder(w).Encode(map[string]any{"name": repo, "tags": tags})
}

func (f *fakeRegistry) serveUpload(w http.ResponseWriter, r *http.Request, repo string) {
	switch r.Method {
	case http.MethodPost:
		if from := r.URL.Query().Get("from"); from != "" {
			f.mu.Lock()
			_, ok := f.blobs[digest.Digest(r.URL.Query().Get("mount"))]
			refuse := f.refuseMount
			f.mu.Unlock()
			if ok && !refuse {
				w.Header().Set("Docker-Content-Digest", r.URL.Query().Get("mount"))
				w.WriteHeader(http.StatusCreated)
				return
			}
		}
		f.mu.Lock()
		f.uploads++
		n := f.uploads
		f.sessions[fmt.Sprintf("u%d", n)] = nil
		f.mu.Unlock()
		w.Header().Set("Location", fmt.Sprintf("/v2/%s/blobs/uploads/u%d", repo, n))
		w.WriteHeader(http.StatusAccepted)
	case http.MethodPatch:
		id := path.Base(r.URL.Path)
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		got, ok := f.sessions[id]
		if ok {
			f.sessions[id] = append(got, body...)
		}
		f.mu.Unlock()
		if !ok {
			writeErr(w, http.StatusNotFound, "BLOB_UPLOAD_UNKNOWN", "no such upload")
			return
		}
		w.Header().Set("Location", r.URL.Path)
		w.WriteHeader(http.StatusAccepted)
	case http.MethodPut:
		id := path.Base(r.URL.Path)
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		got, ok := f.sessions[id]
		body = append(append([]byte(nil), got...), body...)
		f.mu.Unlock()
		if !ok {
			writeErr(w, http.StatusNotFound, "BLOB_UPLOAD_UNKNOWN", "no such upload")
			return
		}
		d := digest.Digest(r.URL.Query().Get("digest"))
		if digest.FromBytes(body) != d {
			writeErr(w, http.StatusBadRequest, "DIGEST_INVALID", "digest does not match")
			return
		}
		f.mu.Lock()
		delete(f.sessions, id)
		f.mu.Unlock()
		f.putBlob(body)
		w.Header().Set("Docker-Content-Digest", d.String())
		w.WriteHeader(http.StatusCreated)
	case http.MethodDelete:
		f.mu.Lock()
		delete(f.sessions, path.Base(r.URL.Path))
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}
