package upload

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
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
		sum, err := newHashCheckpoints(desc, digest.Algorithm.Hash)
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

// FuzzUploadLocation reads an upload session's Location as a registry
// may send it. Accepted: an http or https URL with a host, and a Location that is a
// path stays on the registry that sent it. Refused: the error says what
// was wrong with the Location. No Location is always refused.
func FuzzUploadLocation(f *testing.F) {
	for _, l := range []string{
		"/v2/a/blobs/uploads/5f0c?_state=abc",
		"http://127.0.0.1:5000/v2/a/blobs/uploads/1",
		"https://storage.example.com/upload?sig=x",
		"uploads/relative",
		"//other.example.com/v2/a/blobs/uploads/1",
		"ftp://x/y",
		"javascript:alert(1)",
		"http://[::1",
		"http:/v2/a/blobs/uploads/1", // a scheme and no host
		"https:opaque",
		"",
	} {
		f.Add(l)
	}
	base, err := url.Parse("http://registry.test:5000/v2/a/blobs/uploads/")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, loc string) {
		resp := &http.Response{Header: http.Header{}, Request: &http.Request{Method: http.MethodPost, URL: base}}
		if loc != "" {
			resp.Header["Location"] = []string{loc}
		}
		u, err := sessionURL(resp)
		if err != nil {
			if u != nil {
				t.Fatalf("refused %q but returned %v", loc, u)
			}
			if !strings.Contains(err.Error(), "Location") {
				t.Fatalf("refused %q with %q, which does not name the Location", loc, err)
			}
			return
		}
		if loc == "" {
			t.Fatal("accepted an answer without a Location")
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("accepted %q as %v: scheme %q", loc, u, u.Scheme)
		}
		if u.Host == "" {
			t.Fatalf("accepted %q as %v: no host to send the next request to", loc, u)
		}
		if strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//") && u.Host != base.Host {
			t.Fatalf("the path %q resolved to host %q, not the registry's %q", loc, u.Host, base.Host)
		}
		if *base != (url.URL{Scheme: "http", Host: "registry.test:5000", Path: "/v2/a/blobs/uploads/"}) {
			t.Fatalf("resolving %q changed the request's URL to %v", loc, base)
		}
	})
}
