package blobs

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// FuzzRangeBody: whatever a registry answers to a range read of [off,
// off+n), the body handed out never delivers more than n bytes, and never
// fewer without an error.
func FuzzRangeBody(f *testing.F) {
	f.Add(206, "bytes 10-19/100", int64(10), int64(10), int64(10), 0)
	f.Add(200, "", int64(10), int64(10), int64(100), 0)
	f.Add(206, "bytes 10-19/*", int64(10), int64(10), int64(-1), 5)
	f.Add(206, "bytes 10-29/100", int64(10), int64(10), int64(20), 10)
	f.Fuzz(func(t *testing.T, status int, contentRange string, off, n, contentLength int64, extra int) {
		const size = 100
		if status < 100 || status > 599 || off < 0 || n <= 0 || off+n > size || extra < -size || extra > size {
			return
		}
		blob := bytes.Repeat([]byte{'x'}, size)
		desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: size}
		body := blob[off:min(size, off+n+int64(max(extra, 0)))]
		if status == http.StatusOK {
			body = blob[:max(0, size+min(extra, 0))]
		}
		rec := httptest.NewRecorder()
		rec.WriteHeader(status)
		resp := rec.Result()
		resp.Header.Set("Content-Range", contentRange)
		resp.ContentLength = contentLength
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.Request = httptest.NewRequest(http.MethodGet, "http://registry.test/v2/a/blobs/"+desc.Digest.String(), nil)
		rc, err := rangeBody(resp, "registry.test", desc, off, n)
		if err != nil {
			return
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if int64(len(got)) > n || (err == nil && int64(len(got)) != n) {
			t.Fatalf("%d bytes delivered of %d asked, err %v", len(got), n, err)
		}
	})
}
