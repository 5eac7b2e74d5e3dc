package daemon

import (
	"context"
	"io"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
	registrytypes "github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// The image and registry endpoints of server.Backend: each is the image
// service's (graph.Service), one line, so the daemon's own methods are the
// system ones and the wiring.

func (d *Daemon) ImagesEach(ctx context.Context, opts types.ImageListOptions, emit func(image.Summary) error) error {
	return d.images.ImagesEach(ctx, opts, emit)
}

func (d *Daemon) ImageInspect(ctx context.Context, name string, opts types.InspectOptions) (*types.ImageInspect, error) {
	return d.images.ImageInspect(ctx, name, opts)
}

func (d *Daemon) ImageHistory(ctx context.Context, name string, platform *ocispec.Platform) ([]image.HistoryResponseItem, error) {
	return d.images.ImageHistory(ctx, name, platform)
}

func (d *Daemon) TagImage(ctx context.Context, name string, ref reference.NamedTagged) error {
	return d.images.TagImage(ctx, name, ref)
}

func (d *Daemon) ImageDelete(ctx context.Context, name string, force, prune bool) ([]image.DeleteResponse, error) {
	return d.images.ImageDelete(ctx, name, force, prune)
}

func (d *Daemon) ImageDeletePlatforms(ctx context.Context, name string, ps []ocispec.Platform, force, prune bool) ([]image.DeleteResponse, error) {
	return d.images.ImageDeletePlatforms(ctx, name, ps, force, prune)
}

func (d *Daemon) ImportImage(ctx context.Context, src io.Reader, opts types.ImportOptions, out types.ProgressWriter) error {
	return d.images.ImportImage(ctx, src, opts, out)
}

func (d *Daemon) ExportImage(ctx context.Context, names []string, platforms []ocispec.Platform, w io.Writer) error {
	return d.images.ExportImage(ctx, names, platforms, w)
}

func (d *Daemon) LoadImage(ctx context.Context, r io.Reader, quiet bool, platforms []ocispec.Platform, out types.ProgressWriter) error {
	return d.images.LoadImage(ctx, r, quiet, platforms, out)
}

func (d *Daemon) CheckPlatform(ctx context.Context, name string, p ocispec.Platform) error {
	return d.images.CheckPlatform(ctx, name, p)
}

func (d *Daemon) ImagesPrune(ctx context.Context, filters types.Filters) (*image.PruneReport, error) {
	return d.images.ImagesPrune(ctx, filters)
}

func (d *Daemon) ImageAttestations(ctx context.Context, name string, opts types.AttestationOptions, emit func(image.AttestationStatement) error) error {
	return d.images.ImageAttestations(ctx, name, opts, emit)
}

func (d *Daemon) PullImage(ctx context.Context, opts types.PullOptions, out types.ProgressWriter) error {
	return d.images.PullImage(ctx, opts, out)
}

func (d *Daemon) PushImage(ctx context.Context, opts types.PushOptions, out types.ProgressWriter) error {
	return d.images.PushImage(ctx, opts, out)
}

func (d *Daemon) LookupRemote(ctx context.Context, name string, opts types.RemoteInspectOptions) (*types.RemoteImageInspect, error) {
	return d.images.LookupRemote(ctx, name, opts)
}

func (d *Daemon) RemoteManifest(ctx context.Context, name string, opts types.RemoteInspectOptions) ([]byte, ocispec.Descriptor, error) {
	return d.images.RemoteManifest(ctx, name, opts)
}

func (d *Daemon) DistributionInspect(ctx context.Context, name string, opts types.RemoteInspectOptions) (*registrytypes.DistributionInspect, error) {
	return d.images.DistributionInspect(ctx, name, opts)
}

func (d *Daemon) Login(ctx context.Context, auth *registrytypes.AuthConfig) (identityToken string, err error) {
	return d.images.Login(ctx, auth)
}

func (d *Daemon) CopyImage(ctx context.Context, opts types.CopyOptions, out types.ProgressWriter) error {
	return d.images.CopyImage(ctx, opts, out)
}

func (d *Daemon) SyncImages(ctx context.Context, opts types.SyncOptions, emit func(types.SyncEvent) error) error {
	return d.images.SyncImages(ctx, opts, emit)
}

func (d *Daemon) SyncExport(ctx context.Context, opts types.SyncOptions, w io.Writer) (*types.SyncSummary, error) {
	return d.images.SyncExport(ctx, opts, w)
}

func (d *Daemon) SyncImport(ctx context.Context, opts types.SyncOptions, body io.Reader, emit func(types.SyncEvent) error) error {
	return d.images.SyncImport(ctx, opts, body, emit)
}

func (d *Daemon) CheckRemote(ctx context.Context, opts types.RemoteCheckOptions, emit func(types.RemoteCheckResult) error) error {
	return d.images.CheckRemote(ctx, opts, emit)
}

func (d *Daemon) RemoteTags(ctx context.Context, name string, opts types.RemoteTagsOptions) (*types.RemoteTags, error) {
	return d.images.RemoteTags(ctx, name, opts)
}

func (d *Daemon) ImageDiff(ctx context.Context, req types.DiffRequest) (*types.ImageDiff, error) {
	return d.images.ImageDiff(ctx, req)
}

func (d *Daemon) ImageFiles(ctx context.Context, name string, opts types.FilesOptions, emit func(types.FileEntry) error) error {
	return d.images.ImageFiles(ctx, name, opts, emit)
}

func (d *Daemon) ImageStat(ctx context.Context, name string, opts types.FilesOptions) (container.PathStat, error) {
	return d.images.ImageStat(ctx, name, opts)
}

func (d *Daemon) ImagePackages(ctx context.Context, name string, opts types.PackagesOptions) (*types.ImagePackages, error) {
	return d.images.ImagePackages(ctx, name, opts)
}

func (d *Daemon) ImageArchive(ctx context.Context, name string, opts types.FilesOptions, start func(container.PathStat) (io.Writer, error)) error {
	return d.images.ImageArchive(ctx, name, opts, start)
}
