package server

import (
	"context"
	"io"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/api/types/system"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// fakeBackend is a Backend whose methods tests set one by one; unset ones
// answer errdefs.ErrNotImplemented (501).
type fakeBackend struct {
	images         func(types.ImageListOptions) ([]image.Summary, error)
	inspect        func(string, types.InspectOptions) (*types.ImageInspect, error)
	registryStatus []types.RegistryStatus
	history        func(string, *ocispec.Platform) ([]image.HistoryResponseItem, error)
	tag            func(name string, ref reference.NamedTagged) error
	del            func(string, bool, bool) ([]image.DeleteResponse, error)
	importImage    func(io.Reader, types.ImportOptions, types.ProgressWriter) error
	export         func([]string, io.Writer) error
	load           func(io.Reader, bool, types.ProgressWriter) error
	prune          func(types.Filters) (*image.PruneReport, error)
	pull           func(types.PullOptions, types.ProgressWriter) error
	push           func(types.PushOptions, types.ProgressWriter) error
	lookupRemote   func(string, types.RemoteInspectOptions) (*types.RemoteImageInspect, error)
	remoteManifest func(string, types.RemoteInspectOptions) ([]byte, ocispec.Descriptor, error)
	checkPlatform  func(string, ocispec.Platform) error
	distribution   func(string, types.RemoteInspectOptions) (*registry.DistributionInspect, error)
	login          func(*registry.AuthConfig) (string, error)
	copyImage      func(types.CopyOptions, types.ProgressWriter) error
	checkRemote    func(types.RemoteCheckOptions, func(types.RemoteCheckResult) error) error
	remoteTags     func(string, types.RemoteTagsOptions) (*types.RemoteTags, error)
	systemCheck    func(full bool) (*CheckReport, error)
	subscribe      func(since, until time.Time, f types.Filters) ([]types.EventMessage, <-chan types.EventMessage, func())
	attestations   func(string, types.AttestationOptions) ([]image.AttestationStatement, error)
	files          func(string, types.FilesOptions, func(types.FileEntry) error) error
	stat           func(string, types.FilesOptions) (container.PathStat, error)
	archive        func(string, types.FilesOptions, func(container.PathStat) (io.Writer, error)) error
	diff           func(types.DiffRequest) (*types.ImageDiff, error)
	packages       func(string, types.PackagesOptions) (*types.ImagePackages, error)
}

func (f *fakeBackend) ImageDiff(_ context.Context, req types.DiffRequest) (*types.ImageDiff, error) {
	if f.diff == nil {
		return nil, errNI
	}
	return f.diff(req)
}

func (f *fakeBackend) ImagePackages(_ context.Context, n string, o types.PackagesOptions) (*types.ImagePackages, error) {
	if f.packages == nil {
		return nil, errNI
	}
	return f.packages(n, o)
}

func (f *fakeBackend) ImageFiles(_ context.Context, n string, o types.FilesOptions, emit func(types.FileEntry) error) error {
	if f.files == nil {
		return errNI
	}
	return f.files(n, o, emit)
}

func (f *fakeBackend) ImageStat(_ context.Context, n string, o types.FilesOptions) (container.PathStat, error) {
	if f.stat == nil {
		return container.PathStat{}, errNI
	}
	return f.stat(n, o)
}

func (f *fakeBackend) ImageArchive(_ context.Context, n string, o types.FilesOptions, start func(container.PathStat) (io.Writer, error)) error {
	if f.archive == nil {
		return errNI
	}
	return f.archive(n, o, start)
}

func (f *fakeBackend) ImageAttestations(_ context.Context, n string, o types.AttestationOptions, emit func(image.AttestationStatement) error) error {
	if f.attestations == nil {
		return errNI
	}
	list, err := f.attestations(n, o)
	for _, st := range list {
		if err := emit(st); err != nil {
			return err
		}
	}
	return err
}

var errNI = errdefs.ErrNotImplemented

func (f *fakeBackend) ImagesEach(_ context.Context, o types.ImageListOptions, emit func(image.Summary) error) error {
	if f.images == nil {
		return errNI
	}
	list, err := f.images(o)
	if err != nil {
		return err
	}
	for _, img := range list {
		if err := emit(img); err != nil {
			return err
		}
	}
	return nil
}
func (f *fakeBackend) ImageInspect(_ context.Context, n string, o types.InspectOptions) (*types.ImageInspect, error) {
	if f.inspect == nil {
		return nil, errNI
	}
	return f.inspect(n, o)
}
func (f *fakeBackend) ImageHistory(_ context.Context, n string, p *ocispec.Platform) ([]image.HistoryResponseItem, error) {
	if f.history == nil {
		return nil, errNI
	}
	return f.history(n, p)
}
func (f *fakeBackend) TagImage(_ context.Context, n string, ref reference.NamedTagged) error {
	if f.tag == nil {
		return errNI
	}
	return f.tag(n, ref)
}
func (f *fakeBackend) ImageDelete(_ context.Context, n string, force, prune bool) ([]image.DeleteResponse, error) {
	if f.del == nil {
		return nil, errNI
	}
	return f.del(n, force, prune)
}
func (f *fakeBackend) ImportImage(_ context.Context, r io.Reader, o types.ImportOptions, out types.ProgressWriter) error {
	if f.importImage == nil {
		return errNI
	}
	return f.importImage(r, o, out)
}
func (f *fakeBackend) ImageDeletePlatforms(_ context.Context, n string, _ []ocispec.Platform, force, prune bool) ([]image.DeleteResponse, error) {
	if f.del == nil {
		return nil, errNI
	}
	return f.del(n, force, prune)
}
func (f *fakeBackend) ExportImage(_ context.Context, n []string, _ []ocispec.Platform, w io.Writer) error {
	if f.export == nil {
		return errNI
	}
	return f.export(n, w)
}
func (f *fakeBackend) LoadImage(_ context.Context, r io.Reader, q bool, _ []ocispec.Platform, out types.ProgressWriter) error {
	if f.load == nil {
		return errNI
	}
	return f.load(r, q, out)
}
func (f *fakeBackend) CheckPlatform(_ context.Context, n string, p ocispec.Platform) error {
	if f.checkPlatform == nil {
		return errNI
	}
	return f.checkPlatform(n, p)
}
func (f *fakeBackend) ImagesPrune(_ context.Context, fl types.Filters) (*image.PruneReport, error) {
	if f.prune == nil {
		return nil, errNI
	}
	return f.prune(fl)
}
func (f *fakeBackend) PullImage(_ context.Context, o types.PullOptions, out types.ProgressWriter) error {
	if f.pull == nil {
		return errNI
	}
	return f.pull(o, out)
}
func (f *fakeBackend) PushImage(_ context.Context, o types.PushOptions, out types.ProgressWriter) error {
	if f.push == nil {
		return errNI
	}
	return f.push(o, out)
}
func (f *fakeBackend) LookupRemote(_ context.Context, n string, o types.RemoteInspectOptions) (*types.RemoteImageInspect, error) {
	if f.lookupRemote == nil {
		return nil, errNI
	}
	return f.lookupRemote(n, o)
}
func (f *fakeBackend) RemoteManifest(_ context.Context, n string, o types.RemoteInspectOptions) ([]byte, ocispec.Descriptor, error) {
	if f.remoteManifest == nil {
		return nil, ocispec.Descriptor{}, errNI
	}
	return f.remoteManifest(n, o)
}
func (f *fakeBackend) DistributionInspect(_ context.Context, n string, o types.RemoteInspectOptions) (*registry.DistributionInspect, error) {
	if f.distribution == nil {
		return nil, errNI
	}
	return f.distribution(n, o)
}
func (f *fakeBackend) Login(_ context.Context, a *registry.AuthConfig) (string, error) {
	if f.login == nil {
		return "", errNI
	}
	return f.login(a)
}
func (f *fakeBackend) CopyImage(_ context.Context, o types.CopyOptions, out types.ProgressWriter) error {
	if f.copyImage == nil {
		return errNI
	}
	return f.copyImage(o, out)
}
func (f *fakeBackend) SyncImages(context.Context, types.SyncOptions, func(types.SyncEvent) error) error {
	return errdefs.ErrNotImplemented
}

func (f *fakeBackend) SyncExport(context.Context, types.SyncOptions, io.Writer) (*types.SyncSummary, error) {
	return nil, errdefs.ErrNotImplemented
}

func (f *fakeBackend) SyncImport(context.Context, types.SyncOptions, io.Reader, func(types.SyncEvent) error) error {
	return errdefs.ErrNotImplemented
}

func (f *fakeBackend) CheckRemote(_ context.Context, o types.RemoteCheckOptions, emit func(types.RemoteCheckResult) error) error {
	if f.checkRemote == nil {
		return errNI
	}
	return f.checkRemote(o, emit)
}
func (f *fakeBackend) RemoteTags(_ context.Context, n string, o types.RemoteTagsOptions) (*types.RemoteTags, error) {
	if f.remoteTags == nil {
		return nil, errNI
	}
	return f.remoteTags(n, o)
}
func (f *fakeBackend) SystemCheck(_ context.Context, full bool) (*CheckReport, error) {
	if f.systemCheck == nil {
		return nil, errNI
	}
	return f.systemCheck(full)
}
func (f *fakeBackend) SystemExportIndex(context.Context) (*ExportIndexReport, error) {
	return nil, errNI
}
func (f *fakeBackend) TrustPolicy(context.Context, string) (*types.TrustPolicy, error) {
	return nil, errNI
}
func (f *fakeBackend) SystemInfo(context.Context) (*system.Info, error) {
	return &system.Info{ID: "fake", OSType: "linux"}, nil
}
func (f *fakeBackend) RegistryStatus(context.Context) []types.RegistryStatus {
	return f.registryStatus
}
func (f *fakeBackend) SearchRegistries(context.Context) []string { return nil }
func (f *fakeBackend) SystemVersion(context.Context) system.VersionResponse {
	return system.VersionResponse{Version: "test", APIVersion: types.DefaultAPIVersion}
}
func (f *fakeBackend) SystemDiskUsage(context.Context) (*types.DiskUsage, error) {
	return &types.DiskUsage{LayersSize: 42, Images: []image.Summary{}}, nil
}
func (f *fakeBackend) SubscribeEvents(since, until time.Time, fl types.Filters) ([]types.EventMessage, <-chan types.EventMessage, func()) {
	if f.subscribe == nil {
		return nil, nil, func() {}
	}
	return f.subscribe(since, until, fl)
}
