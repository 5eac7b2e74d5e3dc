package registry

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/transport"
)

// The upload status answer (GET on a session) as registries send it: the
// offset of the next byte and the session's Location from now on.
func TestParseUploadStatus(t *testing.T) {
	base, _ := url.Parse("http://reg.test:5000/v2/a/blobs/uploads/u1?_state=old")
	const size = 8 << 20
	for _, tc := range []struct {
		name, rng, loc string
		noRange        bool
		off            int64
		wantLoc        string
		bad            string // part of the error; "" accepted
	}{
		{name: "distribution mid-blob", rng: "0-3145727", loc: "/v2/a/blobs/uploads/u1?_state=new", off: 3 << 20, wantLoc: "http://reg.test:5000/v2/a/blobs/uploads/u1?_state=new"},
		{name: "bytes= prefix", rng: "bytes=0-99", off: 100},
		{name: "empty session (distribution's 0-0)", rng: "0-0", off: 0},
		{name: "one byte short of the end", rng: "0-8388606", off: size - 1},
		{name: "absolute Location elsewhere", rng: "0-9", loc: "https://store.example.com/up?sig=x", off: 10, wantLoc: "https://store.example.com/up?sig=x"},
		{name: "spaces", rng: " 0-9 ", off: 10},
		{name: "no Range", noRange: true, bad: "no Range"},
		{name: "empty Range", rng: "", bad: "bad upload Range"},
		{name: "not from 0", rng: "5-9", bad: "bad upload Range"},
		{name: "no dash", rng: "100", bad: "bad upload Range"},
		{name: "no end", rng: "0-", bad: "bad upload Range"},
		{name: "negative end", rng: "0--5", bad: "bad upload Range"},
		{name: "plus sign", rng: "0-+5", bad: "bad upload Range"},
		{name: "overflow", rng: "0-99999999999999999999", bad: "bad upload Range"},
		{name: "the whole blob (the answer to the PATCH was lost)", rng: "0-8388607", off: size},
		{name: "one byte beyond the blob", rng: "0-8388608", bad: "beyond the blob"},
		{name: "beyond the blob", rng: "0-9999999999", bad: "beyond the blob"},
		{name: "bad Location scheme", rng: "0-9", loc: "ftp://x/y", bad: "bad Location"},
		{name: "unparsable Location", rng: "0-9", loc: "http://[::1", bad: "bad Location"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if !tc.noRange {
				h["Range"] = []string{tc.rng}
			}
			if tc.loc != "" {
				h.Set("Location", tc.loc)
			}
			st, err := parseUploadStatus(h, base, size)
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("err = %v, want one saying %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.offset != tc.off {
				t.Errorf("offset = %d, want %d", st.offset, tc.off)
			}
			switch {
			case tc.wantLoc == "" && st.location != nil:
				t.Errorf("location = %v, want none", st.location)
			case tc.wantLoc != "" && (st.location == nil || st.location.String() != tc.wantLoc):
				t.Errorf("location = %v, want %s", st.location, tc.wantLoc)
			}
		})
	}
}

// FuzzUploadStatus: whatever a registry answers, an accepted offset is
// within [0, size] and an accepted Location is an http(s) URL with a host.
func FuzzUploadStatus(f *testing.F) {
	for _, s := range [][2]string{
		{"0-3145727", "/v2/a/blobs/uploads/u1?_state=x"},
		{"bytes=0-0", ""},
		{"0-99999999999999999999", ""},
		{"5-9", "http://x/y"},
		{"0-9", "//other/z"},
		{"", "ftp://x"},
	} {
		f.Add(s[0], s[1], int64(1<<20))
	}
	base, _ := url.Parse("http://reg.test/v2/a/blobs/uploads/u1")
	f.Fuzz(func(t *testing.T, rng, loc string, size int64) {
		if size <= 0 {
			size = 1
		}
		h := http.Header{"Range": {rng}}
		if loc != "" {
			h.Set("Location", loc)
		}
		st, err := parseUploadStatus(h, base, size)
		if err != nil {
			return
		}
		if st.offset < 0 || st.offset > size {
			t.Fatalf("Range %q of a %d-byte blob accepted as offset %d", rng, size, st.offset)
		}
		if st.location != nil && (st.location.Host == "" || (st.location.Scheme != "http" && st.location.Scheme != "https")) {
			t.Fatalf("Location %q accepted as %v", loc, st.location)
		}
	})
}

// A resume rereads the source from the last hash checkpoint at or before
// the registry's offset, and the digest over the whole stream is the
// blob's whatever the offsets (2.5 MiB, checkpoints every 1 MiB).
func TestHashCheckpointsRewind(t *testing.T) {
	blob := make([]byte, 5<<19)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	for _, tc := range []struct {
		sent, resumeAt, wantFrom int64
	}{
		{sent: 2 << 20, resumeAt: 3 << 19, wantFrom: 1 << 20},
		{sent: 5 << 19, resumeAt: 2 << 20, wantFrom: 2 << 20},
		{sent: 1 << 19, resumeAt: 0, wantFrom: 0},
		{sent: 5 << 19, resumeAt: 100, wantFrom: 0},
	} {
		sum, err := newHashCheckpoints(desc)
		if err != nil {
			t.Fatal(err)
		}
		sum.Write(blob[:tc.sent])
		var from int64 = -1
		rc, err := openAt(t.Context(), func(_ context.Context, off int64) (io.ReadCloser, error) {
			from = off
			return io.NopCloser(bytes.NewReader(blob[off:])), nil
		}, sum, tc.resumeAt)
		if err != nil {
			t.Fatal(err)
		}
		if from != tc.wantFrom {
			t.Errorf("sent %d, resumed at %d: source reopened at %d, want %d", tc.sent, tc.resumeAt, from, tc.wantFrom)
		}
		if _, err := io.Copy(sum, rc); err != nil {
			t.Fatal(err)
		}
		if got := sum.digest(); got != desc.Digest || sum.n != desc.Size {
			t.Errorf("sent %d, resumed at %d: digest %s over %d bytes, want %s", tc.sent, tc.resumeAt, got, sum.n, desc.Digest)
		}
	}
}

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
// small-blob one before it sends anything (upload_whole.go).
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
