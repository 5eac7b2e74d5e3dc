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
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// uploadService is a test Service whose uploads of the tests' small blobs
// go in one PUT (whole) or stream through PATCH (not whole).
func uploadService(t *testing.T, whole bool) *Service {
	s := testService(t, ServiceOptions{})
	if !whole {
		s.wholeUploadMax = -1
	}
	return s
}

func uploadPath(whole bool) string {
	if whole {
		return "whole"
	}
	return "streamed"
}

// putSeen is what the registry saw of the blob PUTs: body lengths as
// declared, content types, digests named.
type putSeen struct {
	lengths []int64
	types   []string
	digests []string
}

func recordPuts(f *fakeRegistry) *putSeen {
	var seen putSeen
	f.hook = func(_ http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/blobs/uploads/") {
			f.mu.Lock()
			seen.lengths = append(seen.lengths, r.ContentLength)
			seen.types = append(seen.types, r.Header.Get("Content-Type"))
			seen.digests = append(seen.digests, r.URL.Query().Get("digest"))
			f.mu.Unlock()
		}
		return false
	}
	return &seen
}

// A small blob costs two upload requests: POST, then one PUT with the
// whole body (its length declared, application/octet-stream) and the
// right digest.
func TestTransferBlobSmallIsPostAndPut(t *testing.T) {
	f := newFakeRegistry(t)
	seen := recordPuts(f)
	r := transferRepo(t, testService(t, ServiceOptions{}), f, "dst/app")
	blob := []byte(`{"architecture":"amd64","os":"linux"}`)
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	f.reset()
	how, _, err := r.TransferBlob(context.Background(), desc, nil, opener(blob))
	if err != nil || how != BlobUploaded {
		t.Fatalf("TransferBlob = %v, %v", how, err)
	}
	reqs := f.reset()
	want := []string{"HEAD /v2/dst/app/blobs/" + desc.Digest.String(), "POST /v2/dst/app/blobs/uploads/", "PUT /v2/dst/app/blobs/uploads/u1"}
	if strings.Join(reqs, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(reqs, "\n"), strings.Join(want, "\n"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(seen.lengths) != 1 || seen.lengths[0] != desc.Size || seen.types[0] != "application/octet-stream" || seen.digests[0] != desc.Digest.String() {
		t.Errorf("PUT lengths %v, types %q, digests %q; want one of %d bytes, application/octet-stream, %s", seen.lengths, seen.types, seen.digests, desc.Size, desc.Digest)
	}
	if !bytes.Equal(f.blobs[desc.Digest], blob) {
		t.Error("blob not stored")
	}
}

// A small blob whose source lies, after a refused mount opened a session:
// the source is read before the PUT, so the session is cancelled and
// nothing is committed.
func TestTransferBlobSmallLyingSourceCancelsTheMountSession(t *testing.T) {
	f := newFakeRegistry(t)
	f.refuseMount = true
	r := transferRepo(t, testService(t, ServiceOptions{}), f, "dst/app")
	blob := []byte("the real bytes")
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	f.reset()
	_, _, err := r.TransferBlob(context.Background(), desc, []string{"src/app"}, opener([]byte("the fake bytes")))
	if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("err = %v, want a digest mismatch", err)
	}
	reqs := f.reset()
	if countPrefix(reqs, "PUT ") != 0 || countPrefix(reqs, "PATCH ") != 0 || countPrefix(reqs, "DELETE ") != 1 {
		t.Errorf("want the mount's session cancelled and no byte sent:\n%s", strings.Join(reqs, "\n"))
	}
	if n := f.openSessions(); n != 0 {
		t.Errorf("%d upload sessions left open", n)
	}
}

// cutPuts makes f cut the blob PUTs into the first cuts sessions in
// transport: it keeps half of the body in the session (as a registry that
// wrote what it read) and closes the connection without an answer.
func cutPuts(t *testing.T, f *fakeRegistry, cuts int) *atomic.Int64 {
	var n atomic.Int64
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPut || !strings.Contains(r.URL.Path, "/blobs/uploads/u") {
			return false
		}
		id := path.Base(r.URL.Path)
		if k, err := strconv.Atoi(strings.TrimPrefix(id, "u")); err != nil || k > cuts {
			return false
		}
		n.Add(1)
		half := make([]byte, r.ContentLength/2)
		m, _ := io.ReadFull(r.Body, half)
		f.mu.Lock()
		if got, ok := f.sessions[id]; ok {
			f.sessions[id] = append(got, half[:m]...)
		}
		f.mu.Unlock()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return true
		}
		conn.Close()
		return true
	}
	return &n
}

// A small blob's PUT cut in transport: its session is cancelled and the
// upload starts over in a new one (once); nothing is left open.
func TestTransferBlobSmallPutCutRestarts(t *testing.T) {
	blob := bytes.Repeat([]byte("small layer "), 1000)
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	t.Run("once", func(t *testing.T) {
		f := newFakeRegistry(t)
		cut := cutPuts(t, f, 1)
		r := transferRepo(t, testService(t, ServiceOptions{}), f, "dst/app")
		f.reset()
		if how, _, err := r.TransferBlob(context.Background(), desc, nil, opener(blob)); err != nil || how != BlobUploaded {
			t.Fatalf("TransferBlob = %v, %v", how, err)
		}
		reqs := f.reset()
		if cut.Load() == 0 || countPrefix(reqs, "POST ") != 2 || countPrefix(reqs, "DELETE /v2/dst/app/blobs/uploads/u1") == 0 {
			t.Errorf("want the cut session cancelled and a second one:\n%s", strings.Join(reqs, "\n"))
		}
		if n := f.openSessions(); n != 0 {
			t.Errorf("%d upload sessions left open", n)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if !bytes.Equal(f.blobs[desc.Digest], blob) {
			t.Error("blob not stored")
		}
	})
	t.Run("always", func(t *testing.T) {
		f := newFakeRegistry(t)
		cutPuts(t, f, 1<<20)
		r := transferRepo(t, testService(t, ServiceOptions{}), f, "dst/app")
		f.reset()
		if _, _, err := r.TransferBlob(context.Background(), desc, nil, opener(blob)); err == nil {
			t.Fatal("a registry cutting every PUT took the blob")
		}
		reqs := f.reset()
		if got := countPrefix(reqs, "POST "); got != maxUploadRestarts+1 {
			t.Errorf("%d sessions, want %d:\n%s", got, maxUploadRestarts+1, strings.Join(reqs, "\n"))
		}
		if n := f.openSessions(); n != 0 {
			t.Errorf("%d upload sessions left open", n)
		}
	})
}

// The threshold's boundary: up to wholeUploadMax bytes, one PUT with the
// body and no PATCH; one byte more, PATCH then a bodiless PUT. A Service
// with the threshold at -1 streams even an empty blob.
func TestTransferBlobWholeUploadThreshold(t *testing.T) {
	const max = 1000
	for _, tc := range []struct {
		max     int64
		size    int
		patches int
	}{
		{max, 0, 0},
		{max, 1, 0},
		{max, max - 1, 0},
		{max, max, 0},
		{max, max + 1, 1},
		{max, 3 * max, 1},
		{0, 0, 0},
		{0, 1, 1},
		{-1, 0, 1},
		{defaultWholeUploadMax, defaultWholeUploadMax, 0},
		{defaultWholeUploadMax, defaultWholeUploadMax + 1, 1},
	} {
		t.Run(strconv.FormatInt(tc.max, 10)+"/"+strconv.Itoa(tc.size), func(t *testing.T) {
			f := newFakeRegistry(t)
			seen := recordPuts(f)
			s := testService(t, ServiceOptions{})
			s.wholeUploadMax = tc.max
			r := transferRepo(t, s, f, "dst/app")
			blob := bytes.Repeat([]byte{'b'}, tc.size)
			desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
			f.reset()
			if _, _, err := r.TransferBlob(context.Background(), desc, nil, opener(blob)); err != nil {
				t.Fatal(err)
			}
			reqs := f.reset()
			if got := countPrefix(reqs, "PATCH "); got != tc.patches {
				t.Errorf("%d PATCHes, want %d:\n%s", got, tc.patches, strings.Join(reqs, "\n"))
			}
			if got := countPrefix(reqs, "POST ") + countPrefix(reqs, "PUT "); got != 2 {
				t.Errorf("%d POSTs and PUTs, want 2:\n%s", got, strings.Join(reqs, "\n"))
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			wantLen := int64(0) // the streamed path's PUT has no body
			if tc.patches == 0 {
				wantLen = desc.Size
			}
			if len(seen.lengths) != 1 || seen.lengths[0] != wantLen {
				t.Errorf("PUT bodies %v, want one of %d bytes", seen.lengths, wantLen)
			}
			if !bytes.Equal(f.blobs[desc.Digest], blob) {
				t.Error("blob not stored")
			}
		})
	}
}

// A small blob's PUT answered 201 with a receipt naming another digest:
// the registry's answer, not the transport's failure, so the upload fails
// without a second session, and that session is cancelled.
func TestTransferBlobSmallWrongReceiptIsNotRestarted(t *testing.T) {
	f := newFakeRegistry(t)
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPut || !strings.Contains(r.URL.Path, "/blobs/uploads/") {
			return false
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Docker-Content-Digest", digest.FromString("something else").String())
		w.WriteHeader(http.StatusCreated)
		return true
	}
	r := transferRepo(t, testService(t, ServiceOptions{}), f, "dst/app")
	blob := []byte("small config")
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	f.reset()
	_, _, err := r.TransferBlob(context.Background(), desc, nil, opener(blob))
	if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("err = %v, want the receipt's digest mismatch", err)
	}
	reqs := f.reset()
	if got := countPrefix(reqs, "POST "); got != 1 {
		t.Errorf("%d sessions, want 1:\n%s", got, strings.Join(reqs, "\n"))
	}
	if n := f.openSessions(); n != 0 {
		t.Errorf("%d upload sessions left open", n)
	}
}

// A small blob's first PUT refused the way a replay into a half-written
// session is (distribution: 416; a registry that appended: 400; one that
// dropped the session: 404 and no blob): the session is cancelled and a
// new one carries the blob.
func TestTransferBlobSmallPutRefusedRestarts(t *testing.T) {
	for _, status := range []int{http.StatusRequestedRangeNotSatisfiable, http.StatusBadRequest, http.StatusNotFound} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			f := newFakeRegistry(t)
			var puts atomic.Int64
			f.hook = func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method != http.MethodPut || !strings.Contains(r.URL.Path, "/blobs/uploads/") || puts.Add(1) > 1 {
					return false
				}
				io.Copy(io.Discard, r.Body)
				writeErr(w, status, "BLOB_UPLOAD_INVALID", "refused by the test")
				return true
			}
			r := transferRepo(t, testService(t, ServiceOptions{}), f, "dst/app")
			blob := []byte("small config")
			desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
			f.reset()
			if _, _, err := r.TransferBlob(context.Background(), desc, nil, opener(blob)); err != nil {
				t.Fatalf("TransferBlob = %v", err)
			}
			reqs := f.reset()
			if countPrefix(reqs, "POST ") != 2 || countPrefix(reqs, "DELETE ") != 1 {
				t.Errorf("want one session cancelled and a second:\n%s", strings.Join(reqs, "\n"))
			}
			if n := f.openSessions(); n != 0 {
				t.Errorf("%d upload sessions left open", n)
			}
		})
	}
}
