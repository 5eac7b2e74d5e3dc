package layertoc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/containerd/stargz-snapshotter/estargz"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// httpRange reads a blob's ranges from a registry with one single-range
// GET each, as the registry client will: a 206 of exactly n bytes.
type httpRange struct {
	url string // .../v2/REPO/blobs/DIGEST
}

func (h httpRange) ReadRange(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusPartialContent || resp.ContentLength != n {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s %s: %s, %d bytes", h.url, req.Header.Get("Range"), resp.Status, resp.ContentLength)
	}
	return resp.Body, nil
}

// TestListAndReadFromARealRegistry: layers pushed to the real
// distribution registry are listed in ≤ 2 blob requests each and their
// files read in one request each, never the whole blob.
func TestListAndReadFromARealRegistry(t *testing.T) {
	reg := testregistry.StartForTest(t, testregistry.Options{})
	ctx := context.Background()
	tarb := realishTar(t, 300)
	es, esDesc := buildEStargz(t, tarb, estargz.WithChunkSize(64<<10))
	zc, zcDesc := buildZstdChunked(t, tarb)
	for _, layer := range []struct {
		blob, plain []byte
		desc        ocispec.Descriptor
		src         Source
		max         int
	}{{es, gunzip(t, es), esDesc, SourceEStargz, 2}, {zc, unzstd(t, zc), zcDesc, SourceZstdChunked, 1}} {
		t.Run(string(layer.src), func(t *testing.T) {
			want, content := oracle(t, bytes.NewReader(layer.plain))
			if err := reg.Client().PutBlob(ctx, "contents/toc", testregistry.NewBlob(layer.desc.MediaType, layer.blob)); err != nil {
				t.Fatal(err)
			}
			rr := httpRange{url: fmt.Sprintf("%s/v2/contents/toc/blobs/%s", reg.URL, layer.desc.Digest)}
			reg.Counter.Reset()
			toc, err := Read(ctx, rr, layer.desc)
			if err != nil {
				t.Fatal(err)
			}
			if n := reg.Counter.Count("GET blobs"); n > layer.max || n != reg.Counter.Total() {
				t.Fatalf("listing: %d blob GETs of %d requests, want ≤ %d: %s", n, reg.Counter.Total(), layer.max, reg.Counter.Summary())
			}
			sameEntries(t, toc.Entries, want)
			read := 0
			for i := range toc.Entries {
				e := &toc.Entries[i]
				if e.Type != TypeFile || i%100 != 0 {
					continue
				}
				reg.Counter.Reset()
				var b bytes.Buffer
				if err := ReadFile(ctx, rr, layer.src, e, &b); err != nil {
					t.Fatalf("ReadFile(%s): %v", e.Path, err)
				}
				if !bytes.Equal(b.Bytes(), content[e.Path]) {
					t.Fatalf("ReadFile(%s): content differs", e.Path)
				}
				if n := reg.Counter.Total(); n > 1 {
					t.Fatalf("ReadFile(%s): %d requests", e.Path, n)
				}
				read++
			}
			t.Logf("%s: %d entries listed from a %d-byte layer, %d files read, one request each", layer.src, len(toc.Entries), len(layer.blob), read)
		})
	}
}
