package registry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/transport"
)

// A copy's source reopened at an offset: a 206 must start there, a 200
// (Range ignored) has its head dropped, anything else is refused — at the
// open, or at the read for a range that ends early and is asked again
// from where it ended (the one resuming reader, blob_resume.go).
func TestOpenBlobAt(t *testing.T) {
	blob := []byte("0123456789abcdef")
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	for _, tc := range []struct {
		name   string
		status int
		cr     string // Content-Range of a 206
		body   []byte
		want   string // "" when refused
	}{
		{name: "206 from the offset", status: 206, cr: "bytes 10-15/16", body: blob[10:], want: "abcdef"},
		{name: "206 with an unknown total", status: 206, cr: "bytes 10-15/*", body: blob[10:], want: "abcdef"},
		{name: "200: Range ignored", status: 200, body: blob, want: "abcdef"},
		{name: "206 from elsewhere", status: 206, cr: "bytes 0-15/16", body: blob},
		{name: "206 without Content-Range", status: 206, body: blob[10:]},
		{name: "206 ending early", status: 206, cr: "bytes 10-12/16", body: blob[10:13]},
		{name: "416", status: 416},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeRegistry(t)
			f.hook = func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.Contains(r.URL.Path, "/blobs/sha256:") {
					return false
				}
				if got := r.Header.Get("Range"); !strings.HasPrefix(got, "bytes=1") {
					t.Errorf("Range = %q", got)
				}
				if tc.cr != "" {
					w.Header().Set("Content-Range", tc.cr)
				}
				w.WriteHeader(tc.status)
				w.Write(tc.body)
				return true
			}
			svc := testService(t, ServiceOptions{})
			svc.blobBackoff = time.Millisecond
			r := transferRepo(t, svc, f, "src/app")
			rc, err := r.OpenBlobAt(context.Background(), desc, 10)
			if tc.want == "" {
				if err == nil {
					_, err = io.ReadAll(rc)
					rc.Close()
				}
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if err != nil || string(b) != tc.want {
				t.Fatalf("read %q, %v; want %q", b, err, tc.want)
			}
		})
	}
}

// A source that does not verify itself (a store file) and whose bytes are
// not the blob's: TransferBlob's own hash stops it before the PUT, the
// session is cancelled, and the error blames the source, not DST.
// Both paths: the streamed one hashes as it sends (PATCH, then no PUT), the
// small-blob one before it sends anything (registry/upload/whole.go).
func TestTransferBlobHashesWhatItSends(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run(uploadPath(whole), func(t *testing.T) {
			f := newFakeRegistry(t)
			r := transferRepo(t, uploadService(t, whole), f, "dst/app")
			blob := []byte("the real bytes")
			desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
			f.reset()
			_, _, err := r.TransferBlob(context.Background(), desc, nil, opener([]byte("the fake bytes")))
			if !errors.Is(err, ErrDigestMismatch) || errors.Is(err, transport.ErrUpstream) || !strings.Contains(err.Error(), "blob source") {
				t.Fatalf("err = %v, want the source's digest mismatch", err)
			}
			reqs := f.reset()
			if countPrefix(reqs, "PUT ") != 0 {
				t.Errorf("committed:\n%s", strings.Join(reqs, "\n"))
			}
			if whole && countPrefix(reqs, "POST ") != 0 {
				t.Errorf("a small blob's lying source opened a session:\n%s", strings.Join(reqs, "\n"))
			}
			if n := f.openSessions(); n != 0 {
				t.Errorf("%d upload sessions left open", n)
			}
		})
	}
}

// A registry that keeps 2 bytes of every PATCH and fails it: the offset
// moves each time, so the stall count never trips, and maxPatchesPerBlob
// ends it; the session is cancelled and nothing is committed.
func TestTransferBlobPatchesAreBoundedWhateverTheProgress(t *testing.T) {
	f := newFakeRegistry(t)
	patches := 0
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.Contains(r.URL.Path, "/blobs/uploads/u") {
			return false
		}
		id := path.Base(r.URL.Path)
		switch r.Method {
		case http.MethodPatch:
			body, _ := io.ReadAll(r.Body)
			f.mu.Lock()
			patches++
			f.sessions[id] = append(f.sessions[id], body[:min(2, len(body))]...)
			f.mu.Unlock()
			w.WriteHeader(http.StatusInternalServerError)
			return true
		case http.MethodGet:
			f.mu.Lock()
			n := len(f.sessions[id])
			f.mu.Unlock()
			w.Header().Set("Range", "0-"+strconv.Itoa(max(n-1, 0)))
			w.Header().Set("Location", r.URL.Path)
			w.WriteHeader(http.StatusNoContent)
			return true
		}
		return false
	}
	svc := testService(t, ServiceOptions{})
	svc.wholeUploadMax = -1 // 100 bytes: streamed, as every blob over the threshold
	svc.uploadBackoff = time.Millisecond
	r := transferRepo(t, svc, f, "dst/app")
	blob := bytes.Repeat([]byte("x"), 100)
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	_, _, err := r.TransferBlob(context.Background(), desc, nil, opener(blob))
	if err == nil {
		t.Fatal("a registry failing every PATCH took the blob")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if patches != maxPatchesPerBlob {
		t.Errorf("%d PATCHes, want %d", patches, maxPatchesPerBlob)
	}
	if len(f.sessions) != 0 || f.blobs[desc.Digest] != nil {
		t.Errorf("%d sessions open, blob stored: %v", len(f.sessions), f.blobs[desc.Digest] != nil)
	}
}
