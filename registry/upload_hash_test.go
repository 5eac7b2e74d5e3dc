package registry

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"hash"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// countingHash counts the bytes it hashes into n.
type countingHash struct {
	hash.Hash
	n *atomic.Int64
}

func (c countingHash) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.Hash.Write(p)
}

// countUploadHashes makes TransferBlob's own hashes count into the result.
func countUploadHashes(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	old := uploadHash
	uploadHash = func(a digest.Algorithm) hash.Hash { return countingHash{a.Hash(), &n} }
	t.Cleanup(func() { uploadHash = old })
	return &n
}

// countingSource is a BlobOpener over blob counting the bytes read from
// it; verified makes what it opens at 0 verify itself (as FetchBlob's
// reader), its hash counting into hashed.
type countingSource struct {
	blob           []byte
	desc           ocispec.Descriptor
	verified       bool
	read, hashed   atomic.Int64
	opens, atStart atomic.Int64
}

type selfVerifying struct {
	io.ReadCloser
	d digest.Digest
}

func (s selfVerifying) VerifiedDigest() digest.Digest { return s.d }

func (c *countingSource) open(_ context.Context, off int64) (io.ReadCloser, error) {
	c.opens.Add(1)
	var r io.Reader = &countingReader{r: bytes.NewReader(c.blob[off:]), n: &c.read}
	if off == 0 {
		c.atStart.Add(1)
		if c.verified {
			h := countingHash{c.desc.Digest.Algorithm().Hash(), &c.hashed}
			vr := &verifyingReader{r: r, desc: c.desc, host: "src.test", h: h, strict: true}
			return selfVerifying{io.NopCloser(vr), c.desc.Digest}, nil
		}
	}
	return io.NopCloser(r), nil
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// cutFirstPatch makes f keep the first keep bytes of the first PATCH and
// fail it without reading the rest, as a connection cut mid-body; the
// session's status (GET) says what it kept. It counts the PATCHes.
func cutFirstPatch(f *fakeRegistry, keep int) *atomic.Int64 {
	var patches atomic.Int64
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.Contains(r.URL.Path, "/blobs/uploads/u") {
			return false
		}
		id := path.Base(r.URL.Path)
		switch r.Method {
		case http.MethodPatch:
			if patches.Add(1) > 1 {
				return false
			}
			b := make([]byte, keep)
			n, _ := io.ReadFull(r.Body, b)
			f.mu.Lock()
			f.sessions[id] = append(f.sessions[id], b[:n]...)
			f.mu.Unlock()
			w.Header().Set("Connection", "close")
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
	return &patches
}

// One SHA-256 pass over the blob on the happy path: a source that verifies
// itself (copy's) is not hashed again by TransferBlob; one that does not
// (push's store file) is hashed by TransferBlob alone. Either is read once.
func TestTransferBlobHashesEachByteOnce(t *testing.T) {
	blob := make([]byte, 3<<20+17)
	rand.Read(blob)
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	for _, verified := range []bool{true, false} {
		t.Run("verified="+strconv.FormatBool(verified), func(t *testing.T) {
			own := countUploadHashes(t)
			f := newFakeRegistry(t)
			r := transferRepo(t, testService(t, ServiceOptions{}), f, "dst/app")
			src := &countingSource{blob: blob, desc: desc, verified: verified}
			if _, _, err := r.TransferBlob(context.Background(), desc, nil, src.open); err != nil {
				t.Fatal(err)
			}
			if got := src.read.Load(); got != desc.Size {
				t.Errorf("source read %d bytes, want %d", got, desc.Size)
			}
			if hashed := own.Load() + src.hashed.Load(); hashed != desc.Size {
				t.Errorf("%d bytes hashed (TransferBlob %d, the source %d), want %d: one pass", hashed, own.Load(), src.hashed.Load(), desc.Size)
			}
			if verified && own.Load() != 0 {
				t.Errorf("TransferBlob hashed %d bytes of a source that verifies itself", own.Load())
			}
		})
	}
}

// A PATCH cut mid-body while the source verified itself: what the registry
// kept was never verified, so the resume rereads the source from 0, hashes
// the kept prefix without sending it, and hashes the rest as it sends it;
// the blob arrives whole.
func TestTransferBlobResumedFromAVerifyingSourceHashesThePrefix(t *testing.T) {
	// 8 MiB: the first PATCH is cut at 4 MiB, leaving as much to resume.
	blob := make([]byte, 8<<20)
	rand.Read(blob)
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	own := countUploadHashes(t)
	f := newFakeRegistry(t)
	patches := cutFirstPatch(f, 4<<20)
	svc := testService(t, ServiceOptions{})
	svc.uploadBackoff = time.Millisecond
	r := transferRepo(t, svc, f, "dst/app")
	src := &countingSource{blob: blob, desc: desc, verified: true}
	if _, _, err := r.TransferBlob(context.Background(), desc, nil, src.open); err != nil {
		t.Fatal(err)
	}
	if n := patches.Load(); n != 2 {
		t.Fatalf("%d PATCHes, want 2 (one cut, one resumed)", n)
	}
	if n := src.atStart.Load(); n != 2 {
		t.Errorf("source opened at 0 %d times, want 2 (the prefix reread)", n)
	}
	if got := own.Load(); got != desc.Size {
		t.Errorf("TransferBlob hashed %d bytes after the resume, want the whole %d", got, desc.Size)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !bytes.Equal(f.blobs[desc.Digest], blob) {
		t.Error("the blob stored is not the one sent")
	}
}

// A copy whose source registry serves bytes that are not the blob, its
// upload to DST cut mid-body and resumed (OpenBlobAt): nothing is
// committed, no session is left open, and the error names the source.
func TestTransferBlobResumedCopyRejectsBadBytes(t *testing.T) {
	blob := make([]byte, 24<<20)
	rand.Read(blob)
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	bad := bytes.Clone(blob)
	bad[len(bad)-1] ^= 1 // past the cut: only the end of the stream tells
	srcReg := newFakeRegistry(t)
	srcReg.mu.Lock()
	srcReg.blobs[desc.Digest] = bad
	srcReg.mu.Unlock()
	dst := newFakeRegistry(t)
	patches := cutFirstPatch(dst, 4<<20)
	svc := testService(t, ServiceOptions{})
	svc.uploadBackoff = time.Millisecond
	from := transferRepo(t, svc, srcReg, "src/app")
	to := transferRepo(t, svc, dst, "dst/app")
	var mu sync.Mutex
	var offsets []int64
	open := func(ctx context.Context, off int64) (io.ReadCloser, error) {
		mu.Lock()
		offsets = append(offsets, off)
		mu.Unlock()
		return from.OpenBlobAt(ctx, desc, off)
	}
	dst.reset()
	_, _, err := to.TransferBlob(context.Background(), desc, nil, open)
	if !errors.Is(err, ErrDigestMismatch) || !strings.Contains(err.Error(), "blob source") {
		t.Fatalf("err = %v, want the source's digest mismatch", err)
	}
	if n := patches.Load(); n < 2 {
		t.Fatalf("%d PATCHes: the upload did not resume", n)
	}
	if reqs := dst.reset(); countPrefix(reqs, "PUT ") != 0 {
		t.Errorf("committed:\n%s", strings.Join(reqs, "\n"))
	}
	if n := dst.openSessions(); n != 0 {
		t.Errorf("%d upload sessions left open", n)
	}
	t.Logf("source opened at %v", offsets)
}

// A blob PUT whose first answer was lost after the registry committed the
// blob: the transport's replay finds the session closed (404
// BLOB_UPLOAD_UNKNOWN). The blob is there, so the transfer succeeds after
// one HEAD instead of failing the push (found by the fault campaign).
func TestTransferBlobPutReplayedAfterCommitSucceeds(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run(uploadPath(whole), func(t *testing.T) {
			f := newFakeRegistry(t)
			r := transferRepo(t, uploadService(t, whole), f, "dst/app")
			blob := []byte("committed, answer lost")
			desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
			f.hook = func(w http.ResponseWriter, req *http.Request) bool {
				if req.Method != http.MethodPut || req.URL.Query().Get("digest") != desc.Digest.String() {
					return false
				}
				// What the replay meets: the first PUT committed the blob and
				// closed the session.
				f.mu.Lock()
				f.blobs[desc.Digest] = blob
				delete(f.sessions, path.Base(req.URL.Path))
				f.mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `{"errors":[{"code":"BLOB_UPLOAD_UNKNOWN","message":"blob upload unknown to registry"}]}`)
				return true
			}
			f.reset()
			if _, _, err := r.TransferBlob(context.Background(), desc, nil, opener(blob)); err != nil {
				t.Fatalf("TransferBlob = %v, want success: the blob is at the registry", err)
			}
			reqs := f.reset()
			if got := countPrefix(reqs, "POST "); got != 1 {
				t.Errorf("%d POSTs, want 1 (one HEAD settles it, no new session):\n%s", got, strings.Join(reqs, "\n"))
			}
		})
	}
}
