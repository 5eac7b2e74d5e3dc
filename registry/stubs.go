package registry

// Stubs of the registry API; the registry work replaces them with real files.

import (
	"context"
	"io"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	registrytypes "github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Service is the registry client policy.
type Service struct {
	opts ServiceOptions
}

// NewService validates opts and returns a Service.
func NewService(opts ServiceOptions) (*Service, error) { return &Service{opts: opts}, nil }

// ServiceConfig is the RegistryConfig of GET /info.
func (s *Service) ServiceConfig() *registrytypes.ServiceConfig { return &registrytypes.ServiceConfig{} }

// RepositoryInfo describes the repository of a fully qualified name.
// A blocked registry is errdefs.ErrPermissionDenied.
func (s *Service) RepositoryInfo(name reference.Named) (*RepositoryInfo, error) {
	return nil, errdefs.ErrNotImplemented
}

// Candidates parses name as typed and returns the fully qualified references
// to try, in order: one for a name with a registry host; for a short name the
// AddRegistries in order, then docker.io. Blocked registries are left out; if
// none is left, errdefs.ErrPermissionDenied. A malformed name is
// errdefs.ErrInvalidArgument.
func (s *Service) Candidates(name string) ([]reference.Named, error) {
	return nil, errdefs.ErrNotImplemented
}

// Inspect answers a remote inspect: resolve (HEAD), fetch the manifest by
// digest, choose the platform from an index locally, fetch the config by
// digest, all verified, capped and cached; v1 only when there is no v2 API.
func (s *Service) Inspect(ctx context.Context, req InspectRequest) (*RemoteImage, error) {
	return nil, errdefs.ErrNotImplemented
}

// Repository returns a client for one repository (mirrors first for docker.io).
func (s *Service) Repository(ctx context.Context, name reference.Named, creds Credentials) (*Repository, error) {
	return nil, errdefs.ErrNotImplemented
}

// Login validates auth against its registry (ServerAddress) and returns the
// identity token the registry issued, if any. Wrong credentials are
// errdefs.ErrUnauthenticated with the registry's reason.
func (s *Service) Login(ctx context.Context, auth *registrytypes.AuthConfig) (identityToken string, err error) {
	return "", errdefs.ErrNotImplemented
}

// DecodeAuthConfig decodes an X-Registry-Auth header leniently: empty or
// invalid gives nil (anonymous). It never logs the value.
func DecodeAuthConfig(header string) *registrytypes.AuthConfig { return nil }

// SelectManifest chooses the entry of idx for platform p (variant-aware,
// attestations skipped); when none matches, errdefs.ErrNotFound naming the
// platforms that exist.
func SelectManifest(idx *ocispec.Index, p ocispec.Platform) (ocispec.Descriptor, error) {
	return ocispec.Descriptor{}, errdefs.ErrNotImplemented
}

// Repository is a client for one repository on one registry.
type Repository struct{}

// Info describes the repository.
func (r *Repository) Info() *RepositoryInfo { return nil }

// Resolve turns a tag or a digest into the top-level descriptor (HEAD first,
// GET when HEAD gives no digest). Missing repository or tag: errdefs.ErrNotFound.
func (r *Repository) Resolve(ctx context.Context, tagOrDigest string) (ocispec.Descriptor, error) {
	return ocispec.Descriptor{}, errdefs.ErrNotImplemented
}

// FetchManifest returns the manifest bytes for desc, verified against
// desc.Digest, capped at 4 MiB, cached by digest.
func (r *Repository) FetchManifest(ctx context.Context, desc ocispec.Descriptor) ([]byte, error) {
	return nil, errdefs.ErrNotImplemented
}

// FetchConfig returns a config blob, verified, capped at 8 MiB, cached by digest.
func (r *Repository) FetchConfig(ctx context.Context, desc ocispec.Descriptor) ([]byte, error) {
	return nil, errdefs.ErrNotImplemented
}

// FetchBlob streams a blob; the reader fails (before EOF) when the bytes do
// not match desc.Size and desc.Digest.
func (r *Repository) FetchBlob(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	return nil, errdefs.ErrNotImplemented
}

// Tags lists the repository's tags (Link pagination, bounded).
func (r *Repository) Tags(ctx context.Context) ([]string, error) { return nil, errdefs.ErrNotImplemented }

// BlobExists asks the registry (HEAD) whether it has the blob.
func (r *Repository) BlobExists(ctx context.Context, desc ocispec.Descriptor) (bool, error) {
	return false, errdefs.ErrNotImplemented
}

// MountBlob asks the registry to mount desc from fromRepo (same registry,
// path only). mounted is false when the registry would not mount; then
// getContent is used to upload the blob instead.
func (r *Repository) MountBlob(ctx context.Context, desc ocispec.Descriptor, fromRepo string, getContent func() (io.ReadCloser, error)) (mounted bool, err error) {
	return false, errdefs.ErrNotImplemented
}

// PushBlob uploads a blob.
func (r *Repository) PushBlob(ctx context.Context, desc ocispec.Descriptor, content io.Reader) error {
	return errdefs.ErrNotImplemented
}

// PushManifest uploads a manifest or index and, when tag is not empty, tags it.
func (r *Repository) PushManifest(ctx context.Context, desc ocispec.Descriptor, content []byte, tag string) error {
	return errdefs.ErrNotImplemented
}
