package registry

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/testregistry"
	"github.com/wharfproject/wharf/registry/blobs"
)

// serveRange answers a single-range GET of blob as a registry that honours
// Range does; bodyExtra bytes more than the range are sent, chunked (an
// over-long body), when > 0.
func serveRange(w http.ResponseWriter, r *http.Request, blob []byte, bodyExtra int) {
	rg := strings.TrimPrefix(r.Header.Get("Range"), "bytes=")
	f, l, _ := strings.Cut(rg, "-")
	first, _ := strconv.Atoi(f)
	last, _ := strconv.Atoi(l)
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(blob)))
	if bodyExtra == 0 {
		w.Header().Set("Content-Length", strconv.Itoa(last+1-first))
	}
	w.WriteHeader(http.StatusPartialContent)
	w.Write(blob[first:min(len(blob), last+1+bodyExtra)])
}

func rangeRepo(t *testing.T, s *Service, host string, creds Credentials) *Repository {
	t.Helper()
	n, _ := reference.ParseNormalizedNamed(host + "/a/b")
	repo, err := s.Repository(context.Background(), n, creds)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// TestReadBlobRangeAnswers: one request per read, one range in it; what a
// registry answers is accepted only when it is exactly that range (or, for
// a 200, a prefix of at most blobs.MaxRangeSkip to skip), and never more
// than n bytes are delivered.
func TestReadBlobRangeAnswers(t *testing.T) {
	blob := make([]byte, blobs.MaxRangeSkip+64<<10)
	rand.Read(blob)
	size := int64(len(blob))
	upstream := func(err error) bool { return errors.Is(err, ErrUpstream) }
	for _, tc := range []struct {
		name      string
		off, n    int64
		answer    func(w http.ResponseWriter, r *http.Request)
		wantRange string
		wantReqs  int
		wantErr   func(error) bool
	}{
		{name: "206", off: 100, n: 100, wantRange: "bytes=100-199", wantReqs: 1,
			answer: func(w http.ResponseWriter, r *http.Request) { serveRange(w, r, blob, 0) }},
		{name: "206 at the end", off: size - 10, n: 10, wantRange: fmt.Sprintf("bytes=%d-%d", size-10, size-1), wantReqs: 1,
			answer: func(w http.ResponseWriter, r *http.Request) { serveRange(w, r, blob, 0) }},
		{name: "206 body longer than the range is cut", off: 100, n: 100, wantRange: "bytes=100-199", wantReqs: 1,
			answer: func(w http.ResponseWriter, r *http.Request) { serveRange(w, r, blob, 5000) }},
		{name: "200 for the whole blob", off: 0, n: size, wantRange: fmt.Sprintf("bytes=0-%d", size-1), wantReqs: 1,
			answer: func(w http.ResponseWriter, r *http.Request) { w.Write(blob) }},
		{name: "200 skips a small prefix", off: 4096, n: 100, wantRange: "bytes=4096-4195", wantReqs: 1,
			answer: func(w http.ResponseWriter, r *http.Request) { w.Write(blob) }},
		{name: "200 past MaxRangeSkip", off: blobs.MaxRangeSkip + 1, n: 100, wantReqs: 1, wantErr: upstream,
			answer: func(w http.ResponseWriter, r *http.Request) { w.Write(blob) }},
		{name: "wrong Content-Range", off: 100, n: 100, wantReqs: 1, wantErr: upstream,
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Range", fmt.Sprintf("bytes 101-200/%d", size))
				w.WriteHeader(http.StatusPartialContent)
				w.Write(blob[101:201])
			}},
		{name: "wrong total", off: 100, n: 100, wantReqs: 1, wantErr: upstream,
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Range", "bytes 100-199/5000")
				w.WriteHeader(http.StatusPartialContent)
				w.Write(blob[100:200])
			}},
		{name: "multi-range answer", off: 100, n: 100, wantReqs: 1, wantErr: upstream,
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "multipart/byteranges; boundary=x")
				w.WriteHeader(http.StatusPartialContent)
			}},
		{name: "short body", off: 100, n: 100, wantReqs: 1, wantErr: func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) },
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Range", fmt.Sprintf("bytes 100-199/%d", size))
				w.WriteHeader(http.StatusPartialContent)
				w.(http.Flusher).Flush() // chunked: no Content-Length to tell
				w.Write(blob[100:150])
			}},
		{name: "missing", off: 0, n: 10, wantReqs: 1, wantErr: errdefs.IsNotFound,
			answer: func(w http.ResponseWriter, r *http.Request) {
				writeErr(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown")
			}},
		{name: "outside the blob", off: size - 5, n: 10, wantReqs: 0, wantErr: errdefs.IsInvalidArgument},
		{name: "negative", off: -1, n: 10, wantReqs: 0, wantErr: errdefs.IsInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeRegistry(t)
			desc := f.putBlob(blob)
			var mu sync.Mutex
			var ranges []string
			f.hook = func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") {
					return false
				}
				mu.Lock()
				ranges = append(ranges, r.Header.Get("Range"))
				mu.Unlock()
				tc.answer(w, r)
				return true
			}
			repo := rangeRepo(t, testService(t, ServiceOptions{}), f.host(), Credentials{})
			rc, err := repo.ReadBlobRange(context.Background(), desc, tc.off, tc.n)
			var got []byte
			if err == nil {
				got, err = io.ReadAll(rc)
				rc.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			if len(ranges) != tc.wantReqs || (tc.wantRange != "" && ranges[0] != tc.wantRange) {
				t.Fatalf("ranges asked %q, want %d of %q", ranges, tc.wantReqs, tc.wantRange)
			}
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, blob[tc.off:tc.off+tc.n]) {
				t.Fatalf("read %d bytes (want %d, equal %v): %v", len(got), tc.n, bytes.Equal(got, blob[tc.off:tc.off+tc.n]), err)
			}
		})
	}
}

// blobStore plays an object store behind a registry's redirect: it serves
// ranges of blob and records every request's Authorization.
type blobStore struct {
	srv    *httptest.Server
	blob   []byte
	mu     sync.Mutex
	auths  []string
	refuse int // status to answer instead, when set
}

func newBlobStore(t *testing.T, blob []byte) *blobStore {
	s := &blobStore{blob: blob}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auths = append(s.auths, r.Header.Get("Authorization"))
		refuse := s.refuse
		s.mu.Unlock()
		if refuse != 0 {
			w.WriteHeader(refuse)
			return
		}
		serveRange(w, r, s.blob, 0)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *blobStore) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auths...)
}

// TestReadBlobRangeRemembersRedirect: behind a token registry that
// redirects blobs to a store on another host, the first range read costs
// the registry's redirect, the next ones go straight to the store — with
// no Authorization — until the signed URL expires or the store refuses it;
// then one read goes through the registry again. Another credential
// identity does not get the remembered URL.
func TestReadBlobRangeRemembersRedirect(t *testing.T) {
	blob := make([]byte, 64<<10)
	rand.Read(blob)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	store := newBlobStore(t, blob)
	f := newFakeRegistry(t)
	f.tokenAuth = true
	desc := f.putBlob(blob)
	var mu sync.Mutex
	redirects := 0
	clock := now
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			return false
		}
		mu.Lock()
		redirects++
		signed := clock
		mu.Unlock()
		w.Header().Set("Location", store.srv.URL+"/blob?X-Amz-Date="+signed.Format("20060102T150405Z")+"&X-Amz-Expires=600")
		w.WriteHeader(http.StatusTemporaryRedirect)
		return true
	}
	obs := newRecordingObserver()
	s := testService(t, ServiceOptions{Observer: obs})
	s.stores.SetClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	})
	repo := rangeRepo(t, s, f.host(), Credentials{})
	read := func(repo *Repository, off int64) {
		t.Helper()
		rc, err := repo.ReadBlobRange(context.Background(), desc, off, 1000)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		got, err := io.ReadAll(rc)
		if err != nil || !bytes.Equal(got, blob[off:off+1000]) {
			t.Fatalf("read %d bytes: %v", len(got), err)
		}
	}
	check := func(step string, wantRedirects, wantStore int) {
		t.Helper()
		mu.Lock()
		r := redirects
		mu.Unlock()
		reqs := store.requests()
		if r != wantRedirects || len(reqs) != wantStore {
			t.Fatalf("%s: %d redirects, %d store requests; want %d, %d", step, r, len(reqs), wantRedirects, wantStore)
		}
		for _, a := range reqs {
			if a != "" {
				t.Fatalf("%s: the store got Authorization %q", step, a)
			}
		}
	}
	read(repo, 0)
	check("first read", 1, 1)
	read(repo, 5000)
	read(repo, 9000)
	check("remembered", 1, 3)
	if _, hits, misses := obs.take(); hits[CacheBlobLocation] != 2 || misses[CacheBlobLocation] != 1 {
		t.Fatalf("blob_location: %d hits, %d misses; want 2, 1", hits[CacheBlobLocation], misses[CacheBlobLocation])
	}

	mu.Lock()
	clock = now.Add(10 * time.Minute) // past X-Amz-Expires less the margin
	mu.Unlock()
	read(repo, 100)
	check("expired", 2, 4)

	store.mu.Lock()
	store.refuse = http.StatusForbidden
	store.mu.Unlock()
	if _, err := repo.ReadBlobRange(context.Background(), desc, 0, 10); err == nil {
		t.Fatal("a store that refuses everything: no error")
	}
	// Refused at the remembered URL, then once through the registry,
	// whose redirect the store refuses again: an error, not a loop.
	check("refused", 3, 6)
	store.mu.Lock()
	store.refuse = 0
	store.mu.Unlock()

	other := rangeRepo(t, s, f.host(), Credentials{Auth: &registrytypes.AuthConfig{Username: "u", Password: "p", ServerAddress: f.host()}})
	read(repo, 0)
	check("relearned", 4, 7)
	read(other, 0)
	check("another identity", 5, 8)
}

// TestReadBlobRangeOnRealRegistry: the distribution registry serves Range:
// one GET of the blob per read, token auth once.
func TestReadBlobRangeOnRealRegistry(t *testing.T) {
	reg := startTestRegistry(t, testregistry.Options{Auth: testregistry.AuthToken})
	ctx := context.Background()
	img, err := testregistry.NewImage(testregistry.ImageOptions{LayerSize: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Client().PushImage(ctx, "ranges/one", "v1", img); err != nil {
		t.Fatal(err)
	}
	layer := img.Layers[0]
	desc := ocispec.Descriptor{MediaType: layer.MediaType, Digest: digest.Digest(layer.Digest), Size: int64(len(layer.Data))}
	s := testService(t, ServiceOptions{})
	n, _ := reference.ParseNormalizedNamed(reg.Host + "/ranges/one")
	repo, err := s.Repository(ctx, n, Credentials{Auth: &registrytypes.AuthConfig{Username: reg.Username, Password: reg.Password, ServerAddress: reg.Host}})
	if err != nil {
		t.Fatal(err)
	}
	reg.ResetCounters()
	for i, off := range []int64{0, desc.Size / 2, desc.Size - 100} {
		rc, err := repo.ReadBlobRange(ctx, desc, off, 100)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, layer.Data[off:off+100]) {
			t.Fatalf("read %d at %d: %v", len(got), off, err)
		}
		if c := reg.Counter.Count("GET blobs"); c != i+1 {
			t.Fatalf("after %d reads: %d blob GETs (%s)", i+1, c, reg.Counter.Summary())
		}
	}
}
