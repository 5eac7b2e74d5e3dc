package graph

import (
	"context"
	"io"

	"github.com/moby/moby/api/types/image"
	registrytypes "github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// The operations another room answers whole, one line each, so that the
// room that does the work reads at the call.

// PullImage pulls an image (graph/distribution).
func (s *Service) PullImage(ctx context.Context, opts types.PullOptions, out types.ProgressWriter) error {
	return s.dist.PullImage(ctx, opts, out)
}

// CopyImage copies an image between registries (graph/distribution).
func (s *Service) CopyImage(ctx context.Context, opts types.CopyOptions, out types.ProgressWriter) error {
	return s.dist.CopyImage(ctx, opts, out)
}

// Login checks credentials against a registry (graph/distribution).
func (s *Service) Login(ctx context.Context, auth *registrytypes.AuthConfig) (string, error) {
	return s.dist.Login(ctx, auth)
}

// DistributionInspect answers GET /distribution/{name}/json (graph/distribution).
func (s *Service) DistributionInspect(ctx context.Context, name string, opts types.RemoteInspectOptions) (*registrytypes.DistributionInspect, error) {
	return s.dist.DistributionInspect(ctx, name, opts)
}

// RemoteManifest is the raw manifest a name resolves to (graph/distribution).
func (s *Service) RemoteManifest(ctx context.Context, name string, opts types.RemoteInspectOptions) ([]byte, ocispec.Descriptor, error) {
	return s.dist.RemoteManifest(ctx, name, opts)
}

// RemoteTags lists a repository's tags (graph/distribution).
func (s *Service) RemoteTags(ctx context.Context, name string, opts types.RemoteTagsOptions) (*types.RemoteTags, error) {
	return s.dist.RemoteTags(ctx, name, opts)
}

// SyncImages copies a set of images between registries (graph/mirror).
func (s *Service) SyncImages(ctx context.Context, opts types.SyncOptions, emit func(types.SyncEvent) error) error {
	return s.mirror.SyncImages(ctx, opts, emit)
}

// SyncExport writes a set of images as an air-gap archive (graph/mirror).
func (s *Service) SyncExport(ctx context.Context, opts types.SyncOptions, w io.Writer) (*types.SyncSummary, error) {
	return s.mirror.SyncExport(ctx, opts, w)
}

// SyncImport pushes an air-gap archive's images to a registry (graph/mirror).
func (s *Service) SyncImport(ctx context.Context, opts types.SyncOptions, body io.Reader, emit func(types.SyncEvent) error) error {
	return s.mirror.SyncImport(ctx, opts, body, emit)
}

// SetPolicy installs the signature policy; nil: none (graph/distribution).
func (s *Service) SetPolicy(j Judge) { s.dist.SetPolicy(j) }

// Verifications counts the signature verifications (graph/distribution).
func (s *Service) Verifications() int64 { return s.dist.Verifications() }

// Verdicts counts the policy's verdicts by decision (graph/distribution).
func (s *Service) Verdicts() (accepted, rejected, noPolicy int64) { return s.dist.Verdicts() }

// LoadImage loads a docker-archive or OCI-layout tar (graph/archive).
func (s *Service) LoadImage(ctx context.Context, r io.Reader, quiet bool, platforms []ocispec.Platform, out types.ProgressWriter) error {
	return s.archive.LoadImage(ctx, r, quiet, platforms, out)
}

// ExportImage writes images as a docker save tar (graph/archive).
func (s *Service) ExportImage(ctx context.Context, names []string, platforms []ocispec.Platform, w io.Writer) error {
	return s.archive.ExportImage(ctx, names, platforms, w)
}

// ImportImage creates an image from a root-filesystem tar (graph/archive).
func (s *Service) ImportImage(ctx context.Context, src io.Reader, opts types.ImportOptions, out types.ProgressWriter) error {
	return s.archive.ImportImage(ctx, src, opts, out)
}

// Count is the number of images (graph/store).
func (s *Service) Count() int { return s.images.Count() }

// Check runs the store check (graph/store).
func (s *Service) Check(ctx context.Context, full bool) (*CheckReport, error) {
	return s.images.Check(ctx, full)
}

// StartScrub starts the store's background scrub (graph/store).
func (s *Service) StartScrub(done func(*types.ScrubReport)) { s.images.StartScrub(done) }

// FlushIndex writes the layout's index.json now (graph/store).
func (s *Service) FlushIndex() error { return s.images.FlushIndex() }

// Close closes the store (graph/store).
func (s *Service) Close() error { return s.images.Close() }

// BlobUsage counts the stored blobs and their bytes, for metrics (graph/store).
func (s *Service) BlobUsage() (blobs int, bytes int64, err error) { return s.images.BlobUsage() }

// Commits reports the store's write transactions and the changes they held (graph/store).
func (s *Service) Commits() (commits, changes int64) { return s.images.Commits() }

// PartialRestarts counts the resumed downloads restarted from zero (graph/store).
func (s *Service) PartialRestarts() int64 { return s.images.PartialRestarts() }

// ImageAttestations hands over an image's in-toto statements, read from
// the store or its registry (graph/distribution).
func (s *Service) ImageAttestations(ctx context.Context, name string, opts types.AttestationOptions, emit func(image.AttestationStatement) error) error {
	return s.dist.ImageAttestations(ctx, name, opts, emit)
}

// CheckRemote is the update check of the local tags (graph/updates).
func (s *Service) CheckRemote(ctx context.Context, opts types.RemoteCheckOptions, emit func(types.RemoteCheckResult) error) error {
	return s.updates.CheckRemote(ctx, opts, emit)
}

// CheckRemoteSkipping is CheckRemote without the tags of the registries
// skip names (graph/updates).
func (s *Service) CheckRemoteSkipping(ctx context.Context, opts types.RemoteCheckOptions, skip func(registry string) bool, emit func(types.RemoteCheckResult) error) error {
	return s.updates.CheckRemoteSkipping(ctx, opts, skip, emit)
}
