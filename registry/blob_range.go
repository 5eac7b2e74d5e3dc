package registry

import (
	"context"
	"io"
	"net/http"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/blobs"
)

// ReadBlobRange reads bytes [off, off+n) of a blob in one single-range
// request (blobs.GetRange): exactly n bytes, not verified — a range has no
// digest; the caller checks them against what it knows of them. A redirect
// to the blob's store is remembered for this repository and credential
// identity while its signed URL is valid, and the next range read goes
// straight there.
func (r *Repository) ReadBlobRange(ctx context.Context, desc ocispec.Descriptor, off, n int64) (io.ReadCloser, error) {
	if err := validateDescriptor(desc); err != nil {
		return nil, err
	}
	var out io.ReadCloser
	err := r.readEach(ctx, func(ep *repoEndpoint) error {
		rc, err := blobs.GetRange(ctx, target{r, ep}, desc, off, n)
		out = rc
		return err
	})
	return out, err
}

// Locations, LocationKey and SendDirect make target a blobs.RangeTarget.
// The key holds the credential identity: a signed URL is a capability,
// handed only to a caller whose own credentials were sent for it.
func (t target) Locations() *blobs.Locations { return t.r.svc.stores }
func (t target) LocationKey() string         { return t.ep.host + "\x00" + t.r.scope() }

// SendDirect sends req to a blob store through the service's stack (TLS,
// retries, metrics, the redirect policy) but not through the endpoint's
// authorizing client: the store gets no Authorization.
func (t target) SendDirect(req *http.Request) (*http.Response, error) {
	if ua := t.r.svc.opts.UserAgent; ua != "" {
		req.Header.Set("User-Agent", ua)
	}
	return t.r.svc.http.Do(req)
}
