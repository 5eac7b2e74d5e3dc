package registry

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/registry/blobs"
)

// blobAnswer is how the test registry answers one GET of the blob.
type blobAnswer int

const (
	answerWhole          blobAnswer = iota // honour Range (206 from the offset, or 200 without one)
	answerReset                            // cutAt bytes of the range, then a TCP RST
	answerShort                            // cutAt bytes, chunked, then a clean end: a truncation
	answerStall                            // cutAt bytes, then silence until the client leaves
	answerIgnoreRange                      // 200 and the whole blob, Range or not
	answerIgnoreRangeCut                   // 200, cutAt bytes of the whole blob, then a TCP RST
	answerBadRange                         // 206 whose Content-Range starts one byte late
	answerNothing                          // headers, then the connection closes: no byte moves
)

const cutAt = 10000

// blobReopens bounds the reopenings without a byte (registry/blobs).
const blobReopens = blobs.MaxReopens

func serveBlobAnswer(w http.ResponseWriter, r *http.Request, blob []byte, a blobAnswer) {
	off := 0
	if rg := r.Header.Get("Range"); rg != "" && a != answerIgnoreRange && a != answerIgnoreRangeCut {
		off, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
	}
	if a == answerBadRange {
		off++
	}
	rest := blob[off:]
	if off > 0 {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, len(blob)-1, len(blob)))
	}
	if a != answerShort {
		w.Header().Set("Content-Length", strconv.Itoa(len(rest)))
	}
	if off > 0 {
		w.WriteHeader(http.StatusPartialContent)
	}
	switch a {
	case answerWhole, answerIgnoreRange, answerBadRange:
		w.Write(rest)
		return
	case answerNothing:
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	w.Write(rest[:min(cutAt, len(rest))])
	w.(http.Flusher).Flush()
	switch a {
	case answerReset, answerIgnoreRangeCut:
		hostile.Reset(w)
	case answerStall:
		<-r.Context().Done()
	}
}

// TestBlobResumes reads a 64 KiB blob through registries that break its
// body in every way issue 20 names: the bytes come out whole and once, the
// Range asked is where the previous body broke, and what cannot be resumed
// fails with its class.
func TestBlobResumes(t *testing.T) {
	blob := make([]byte, 64<<10)
	rand.Read(blob)
	r := func(n int, a blobAnswer) []blobAnswer {
		out := make([]blobAnswer, n)
		for i := range out {
			out[i] = a
		}
		return out
	}
	cat := func(as ...[]blobAnswer) (out []blobAnswer) {
		for _, a := range as {
			out = append(out, a...)
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		script     []blobAnswer // answers in order; answerWhole after the end
		wantRanges []string
		wantErr    func(error) bool
	}{
		{name: "reset", script: r(2, answerReset), wantRanges: []string{"", "bytes=10000-", "bytes=20000-"}},
		{name: "truncation", script: r(3, answerShort), wantRanges: []string{"", "bytes=10000-", "bytes=20000-", "bytes=30000-"}},
		{name: "stall", script: r(1, answerStall), wantRanges: []string{"", "bytes=10000-"}},
		{name: "200 restarts the blob", script: []blobAnswer{answerReset, answerIgnoreRange}, wantRanges: []string{"", "bytes=10000-"}},
		{name: "200 cut before the offset", script: []blobAnswer{answerReset, answerReset, answerIgnoreRangeCut},
			wantRanges: []string{"", "bytes=10000-", "bytes=20000-", "bytes=20000-"}},
		{name: "bad Content-Range", script: []blobAnswer{answerReset, answerBadRange}, wantRanges: []string{"", "bytes=10000-"},
			wantErr: func(err error) bool {
				return errors.Is(err, ErrUpstream) && strings.Contains(err.Error(), "Content-Range")
			}},
		{name: "attempts exhausted", script: cat(r(1, answerReset), r(blobReopens, answerNothing)),
			wantRanges: append([]string{""}, strings.Split(strings.Repeat("bytes=10000-,", blobReopens), ",")[:blobReopens]...),
			wantErr: func(err error) bool {
				return errdefs.IsUnavailable(err) && strings.Contains(err.Error(), "no byte in 5 reopenings")
			}},
		{name: "a byte resets the count", script: cat(r(1, answerReset), r(blobReopens-1, answerNothing), r(1, answerReset), r(blobReopens-1, answerNothing)),
			wantRanges: cat2("", rep("bytes=10000-", blobReopens), rep("bytes=20000-", blobReopens))},
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
				i := len(ranges)
				ranges = append(ranges, r.Header.Get("Range"))
				mu.Unlock()
				a := answerWhole
				if i < len(tc.script) {
					a = tc.script[i]
				}
				serveBlobAnswer(w, r, blob, a)
				return true
			}
			// 300 ms: the body window, so a stall ends fast.
			s := testService(t, ServiceOptions{Timeout: 300 * time.Millisecond})
			s.blobBackoff = time.Millisecond
			n, _ := reference.ParseNormalizedNamed(f.host() + "/a/b")
			repo, err := s.Repository(context.Background(), n, Credentials{})
			if err != nil {
				t.Fatal(err)
			}
			rc, err := repo.FetchBlob(context.Background(), desc)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			mu.Lock()
			defer mu.Unlock()
			if strings.Join(ranges, ",") != strings.Join(tc.wantRanges, ",") {
				t.Errorf("ranges asked %q, want %q", ranges, tc.wantRanges)
			}
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, blob) {
				t.Fatalf("read %d bytes (equal %v), %v", len(got), bytes.Equal(got, blob), err)
			}
		})
	}
}

func rep(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func cat2(first string, rest ...[]string) []string {
	out := []string{first}
	for _, r := range rest {
		out = append(out, r...)
	}
	return out
}

// TestBlobResumesFromKeptBytes: FetchBlobFrom hashes the kept bytes, asks
// for the rest only, and fails when the kept bytes are not the blob's.
func TestBlobResumesFromKeptBytes(t *testing.T) {
	blob := make([]byte, 64<<10)
	rand.Read(blob)
	f := newFakeRegistry(t)
	desc := f.putBlob(blob)
	var ranges []string
	var mu sync.Mutex
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") {
			return false
		}
		mu.Lock()
		ranges = append(ranges, r.Header.Get("Range"))
		mu.Unlock()
		serveBlobAnswer(w, r, blob, answerWhole)
		return true
	}
	s := testService(t, ServiceOptions{})
	n, _ := reference.ParseNormalizedNamed(f.host() + "/a/b")
	repo, err := s.Repository(context.Background(), n, Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	read := func(have []byte) ([]byte, error) {
		rc, err := repo.FetchBlobFrom(context.Background(), desc, bytes.NewReader(have), int64(len(have)))
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	got, err := read(blob[:40000])
	if err != nil || !bytes.Equal(got, blob[40000:]) {
		t.Fatalf("rest: %d bytes, %v", len(got), err)
	}
	if got, err := read(blob); err != nil || len(got) != 0 {
		t.Fatalf("whole blob kept: %d bytes, %v", len(got), err)
	}
	bad := bytes.Clone(blob[:40000])
	bad[7] ^= 1
	if _, err := read(bad); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("corrupt kept bytes: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "bytes=40000-,bytes=40000-"; strings.Join(ranges, ",") != want {
		t.Errorf("ranges %q, want %s", ranges, want)
	}
	_ = ocispec.Descriptor{}
}
