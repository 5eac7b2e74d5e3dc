package registry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/transport"
)

// FetchBlobFrom streams a blob from offset on: the BlobOpener of a copy,
// whose upload to DST may resume mid-blob (TransferBlob). From 0 it is
// FetchBlob (verified as it streams). From an offset it is a GET with
// Range: a 206 must start at offset (Content-Range) and is capped at the
// bytes left; a 200 (a registry that ignores Range) has the first offset
// bytes dropped. Those bytes are not verified here: TransferBlob hashes
// the whole stream before it commits.
func (r *Repository) FetchBlobFrom(ctx context.Context, desc ocispec.Descriptor, offset int64) (io.ReadCloser, error) {
	if offset == 0 {
		return r.FetchBlob(ctx, desc)
	}
	if err := validateDescriptor(desc); err != nil {
		return nil, err
	}
	if offset < 0 || offset > desc.Size {
		return nil, fmt.Errorf("blob %s: offset %d outside its %d bytes%.0w", desc.Digest, offset, desc.Size, errdefs.ErrInvalidArgument)
	}
	var out io.ReadCloser
	err := r.readEach(ctx, func(ep *repoEndpoint) error {
		rc, err := r.getBlobFrom(ctx, ep, desc, offset)
		if err != nil {
			return err
		}
		out = rc
		return nil
	})
	return out, err
}

func (r *Repository) getBlobFrom(ctx context.Context, ep *repoEndpoint, desc ocispec.Descriptor, offset int64) (io.ReadCloser, error) {
	ctx = transport.WithRepositoryScope(ctx, ep.host, r.path, transport.ActionPull)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.blobURL(ep, desc.Digest), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
	resp, err := ep.client.Do(req)
	if err != nil {
		return nil, err
	}
	left := desc.Size - offset
	switch resp.StatusCode {
	case http.StatusPartialContent:
		want := "bytes " + strconv.FormatInt(offset, 10) + "-" + strconv.FormatInt(desc.Size-1, 10) + "/"
		if cr := resp.Header.Get("Content-Range"); len(cr) < len(want) || cr[:len(want)] != want {
			resp.Body.Close()
			return nil, invalidDocument(ep.host, "blob %s: Content-Range %q, asked from %d of %d bytes", desc.Digest, cr, offset, desc.Size)
		}
		return readCloser{Reader: io.LimitReader(resp.Body, left), Closer: resp.Body}, nil
	case http.StatusOK:
		if resp.ContentLength != -1 && resp.ContentLength != desc.Size {
			resp.Body.Close()
			return nil, fmt.Errorf("%s %q: mismatch Content-Length", resp.Request.Method, resp.Request.URL.Redacted())
		}
		if _, err := io.CopyN(io.Discard, resp.Body, offset); err != nil {
			resp.Body.Close()
			return nil, err
		}
		return readCloser{Reader: io.LimitReader(resp.Body, left), Closer: resp.Body}, nil
	case http.StatusNotFound:
		resp.Body.Close()
		return nil, fmt.Errorf("%s: not found%.0w", desc.Digest, errdefs.ErrNotFound)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return nil, transport.StatusError(http.MethodGet, resp, body, ep.host)
}
