package registry

import (
	"context"
	"fmt"
	"net/http"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/imagespec"
	v1 "github.com/wharfproject/wharf/registry/v1"
)

// inspectV1 reads tag from a registry that has only the v1 API
// (registry/v1), for a remote inspect: v1 has no digests, so a digest
// reference is not found there.
func (r *Repository) inspectV1(ctx context.Context, tag string, dgst digest.Digest, implicit bool) (*RemoteImage, error) {
	if dgst != "" {
		return nil, fmt.Errorf("registry %s speaks only v1, which has no digests%.0w", r.upstream.host, errdefs.ErrNotFound)
	}
	img, err := v1.Inspect(ctx, v1Target{r}, tag, implicit, maxConfigSize)
	if err != nil {
		return nil, err
	}
	cfg := img.Config
	return &RemoteImage{
		TopLevel:    TopLevel{Registry: r.info.Index.Name, Name: r.info.Name, Tag: img.Tag},
		Config:      ocispec.Descriptor{MediaType: imagespec.MediaTypeDockerConfig, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))},
		ConfigBytes: cfg,
		V1:          true,
	}, nil
}

// v1Target is the repository's upstream as registry/v1 reaches it: the
// HTTP stack with the user agent, and the index's credentials as Basic.
type v1Target struct{ r *Repository }

func (t v1Target) Host() string    { return t.r.upstream.host }
func (t v1Target) BaseURL() string { return t.r.upstream.baseURL() }
func (t v1Target) Path() string    { return t.r.path }
func (t v1Target) Basic() (string, string) {
	if ac := t.r.creds(); ac != nil {
		return ac.Username, ac.Password
	}
	return "", ""
}
func (t v1Target) Do(req *http.Request) (*http.Response, error) {
	t.r.svc.setUserAgent(req)
	return t.r.svc.http.Do(req)
}
